#include "kernels/cpu/adamw.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "tests/kernels/simd_variant.hpp"

namespace mlpo {

namespace {

constexpr int kSteps = 20;

// ---------------------------------------------------------------------------------------------
// Inputs: a grid of gradient regimes, one per element (element i is in regime i % kRegimes),
// with a fresh gradient for every step.

enum Regime {
  zero,         // g = 0 every step: only weight decay moves p
  denormal,     // |g| in [1e-41, 1e-39]: fp32 subnormals
  tiny,         // |g| in [1e-32, 1e-28]: g*g underflows in fp32
  near_eps,     // |g| in [1e-9, 1e-6]: sqrt(vhat) comparable to eps
  ordinary,     // N(0,1) * 10^U(-4, 1)
  large,        // |g| in [1e3, 1e6]
  huge,         // |g| in [1e16, 1e18]: g*g near 1e36, v still below FLT_MAX
  alternating,  // ordinary magnitude, sign flips every step: m cancels towards 0
  sparse,       // 0 on most steps, now and then ~1
  kRegimes
};

double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(std::log10(lo), std::log10(hi));
  return std::pow(10.0, u(rng));
}

float gradient(Regime r, int step, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> coin(0, 1);
  const double sign = coin(rng) ? 1.0 : -1.0;
  std::normal_distribution<double> normal;
  switch (r) {
    case zero:
      return 0.0f;
    case denormal:
      return static_cast<float>(sign * log_uniform(rng, 1e-41, 1e-39));
    case tiny:
      return static_cast<float>(sign * log_uniform(rng, 1e-32, 1e-28));
    case near_eps:
      return static_cast<float>(sign * log_uniform(rng, 1e-9, 1e-6));
    case ordinary:
      return static_cast<float>(normal(rng) * log_uniform(rng, 1e-4, 10.0));
    case large:
      return static_cast<float>(sign * log_uniform(rng, 1e3, 1e6));
    case huge:
      return static_cast<float>(sign * log_uniform(rng, 1e16, 1e18));
    case alternating:
      return static_cast<float>((step % 2 ? 1.0 : -1.0) * log_uniform(rng, 1e-3, 1.0));
    case sparse:
      return std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? static_cast<float>(normal(rng)) : 0.0f;
    case kRegimes:
      break;
  }
  return 0.0f;
}

float initial_weight(std::size_t i, std::mt19937_64& rng) {
  switch (i % 7) {
    case 0:
      return 0.0f;
    case 1:
      return 1e-30f;
    case 2:
      return -3e20f;
    default:
      return static_cast<float>(std::normal_distribution<double>(0.0, 1.0)(rng));
  }
}

struct Problem {
  std::vector<float> p0;
  std::vector<std::vector<bf16>> grads;  // [step][element]
  std::vector<std::vector<float>> grads_fp32;

  Problem(std::size_t n, std::uint64_t seed) : p0(n), grads(kSteps), grads_fp32(kSteps) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < n; ++i) p0[i] = initial_weight(i, rng);
    for (int t = 0; t < kSteps; ++t) {
      grads[t].resize(n);
      grads_fp32[t].resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float g = gradient(static_cast<Regime>(i % kRegimes), t, rng);
        grads[t][i] = float_to_bf16(g);
        grads_fp32[t][i] = g;  // full fp32 mantissa: the baseline reads these back from storage
      }
    }
  }
};

struct State {
  std::vector<float> p, m, v;
  std::vector<bf16> p_out;
  explicit State(const std::vector<float>& p0)
      : p(p0), m(p0.size(), 0.0f), v(p0.size(), 0.0f), p_out(p0.size()) {}
};

AdamWParams params_for_step(AdamWParams a, int t) {
  a.step = t + 1;
  return a;
}

// Relative error of `got` against the reference, measured against the largest magnitude the
// element has had along its trajectory, not just its current value. Floating-point rounding is
// relative to the operands: a weight that was 0.5 and has been pushed to 1e-7 carries the
// absolute error of 0.5's ulp forever, and m crossing zero keeps the error of the terms that
// cancelled. Dividing by the current value would call exact-as-possible arithmetic wrong.
//
// kFloor: below FLT_MIN (1.18e-38) fp32 values are subnormal, spaced 2^-149 (1.4e-45) apart
// whatever their size, so relative accuracy cannot exist there. With kFloor = 8*FLT_MIN, the
// tolerance 1e-6*kFloor is ~67 subnormal spacings; 20 steps of at most 3 subnormal roundings
// (half a spacing each), contracted by beta, accumulate at most ~30. Anything normal is held to
// the full 1e-6.
//
// That floor also reaches p: a subnormal gradient gives a subnormal m (a few significant bits),
// and the step lr*mhat/(sqrt(vhat)+eps) multiplies it by up to lr/(bc1*eps) ~ 1e4..1e5, into the
// normal range. A weight that starts at 0 is then made only of such steps, and inherits m's
// storage error; no fp32 AdamW can do better. So p's floor is kFloor plus m's floor carried
// through every step's lr/(bc1*(sqrt(vhat)+eps)) (Reference::p_floor); for any weight that is not
// built from subnormal moments this adds nothing measurable.
constexpr double kFloor = 8.0 * FLT_MIN;

// p is held to 1e-6 except for one effect no fp32 master weight can avoid: p is stored as fp32
// after every step, which rounds it by up to half an ulp, 2^-24 relative. When the step is
// dominated by weight decay (zero or tiny gradients), lr*wd*p is nearly the same number of ulps
// each step, so the 20 roundings all go the same way: up to 20 * 2^-24 = 1.19e-6 after 20 steps
// for a weight just above a power of two (measured here: 1.15e-6). The kernel rounds p exactly
// once per step (adamw_variants.hpp), the least any fp32 state allows; a second rounding per
// step, as in `p *= 1 - lr*wd; p -= ...`, would break this bound. m and v get the full 1e-6.
constexpr double kPStorageBound = kSteps * 0x1p-24;

// ---------------------------------------------------------------------------------------------
// A straightforward double-precision AdamW, written as PyTorch's torch.optim.AdamW does it.

struct Reference {
  // With fp32_state, p, m and v are rounded to fp32 after every step, as they are stored
  // between steps by PyTorch with fp32 parameters (and by MLPO's tiers): each step is still
  // computed in double, so the only difference left to the kernel is its in-step arithmetic.
  bool fp32_state = false;

  std::vector<double> p, m, v;
  // The largest magnitude each quantity (and each term summed into it) has reached so far.
  std::vector<double> p_scale, m_scale, v_scale;
  // The floor of p's scale: kFloor plus what m's floor becomes after passing through the step.
  std::vector<double> p_floor;

  explicit Reference(const std::vector<float>& p0, bool fp32_state_in = false)
      : fp32_state(fp32_state_in),
        p(p0.begin(), p0.end()),
        m(p0.size()),
        v(p0.size()),
        p_scale(p),
        m_scale(p0.size()),
        v_scale(p0.size()),
        p_floor(p0.size(), kFloor) {
    for (double& s : p_scale) s = std::abs(s);
  }

  template <class Grad>
  void step(const AdamWParams& a, const std::vector<Grad>& grad) {
    const double b1 = a.beta1, b2 = a.beta2, lr = a.lr, wd = a.weight_decay, eps = a.eps;
    const double bc1 = 1.0 - std::pow(b1, static_cast<double>(a.step));
    const double bc2 = 1.0 - std::pow(b2, static_cast<double>(a.step));
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = as_double(grad[i]) * static_cast<double>(a.grad_scale);
      m[i] = b1 * m[i] + (1.0 - b1) * g;
      v[i] = b2 * v[i] + (1.0 - b2) * g * g;
      const double mhat = m[i] / bc1;
      const double vhat = v[i] / bc2;
      p[i] *= 1.0 - lr * wd;
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      if (fp32_state) {
        p[i] = static_cast<float>(p[i]);
        m[i] = static_cast<float>(m[i]);
        v[i] = static_cast<float>(v[i]);
      }
      p_scale[i] = std::max(p_scale[i], std::abs(p[i]));
      p_floor[i] += lr * (kFloor / bc1) / (std::sqrt(vhat) + eps);
      m_scale[i] = std::max({m_scale[i], std::abs(m[i]), std::abs((1.0 - b1) * g)});
      v_scale[i] = std::max(v_scale[i], std::abs(v[i]));
    }
  }

  static double as_double(bf16 g) { return bf16_to_float(g); }
  static double as_double(float g) { return g; }
};

double relative_error(float got, double want, double scale, double floor = kFloor) {
  return std::abs(static_cast<double>(got) - want) / std::max(scale, floor);
}

struct Worst {
  double error = 0.0;
  std::size_t index = 0;
  void see(double e, std::size_t i) {
    if (!(e <= error)) error = e, index = i;  // NaN counts as worst
  }
};

template <class Grad>
void expect_matches_reference(const AdamWParams& a, const Problem& problem,
                              const std::vector<std::vector<Grad>>& grads, SimdIsa isa,
                              bool fp32_state = false) {
  State s(problem.p0);
  Reference ref(problem.p0, fp32_state);
  const std::size_t n = problem.p0.size();
  for (int t = 0; t < kSteps; ++t) {
    const AdamWParams at = params_for_step(a, t);
    if constexpr (std::is_same_v<Grad, bf16>)
      adamw_update_bf16grad(at, s.p.data(), s.m.data(), s.v.data(), grads[t].data(), s.p_out.data(), n, isa);
    else
      adamw_update_fp32grad(at, s.p.data(), s.m.data(), s.v.data(), grads[t].data(), s.p_out.data(), n, isa);
    ref.step(at, grads[t]);
  }
  Worst wp, wm, wv;
  std::size_t p_above_1e6 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double ep = relative_error(s.p[i], ref.p[i], ref.p_scale[i], ref.p_floor[i]);
    wp.see(ep, i);
    p_above_1e6 += ep > 1e-6;
    wm.see(relative_error(s.m[i], ref.m[i], ref.m_scale[i]), i);
    wv.see(relative_error(s.v[i], ref.v[i], ref.v_scale[i]), i);
  }
  const auto where = [&](const Worst& w, const std::vector<float>& got, const std::vector<double>& want) {
    return " (element " + std::to_string(w.index) + ", regime " + std::to_string(w.index % kRegimes) +
           ": got " + std::to_string(got[w.index]) + ", want " + std::to_string(want[w.index]) + ")";
  };
  // Against a reference that stores fp32 state like the kernel, p gets the full 1e-6 too.
  EXPECT_LE(wp.error, fp32_state ? 1e-6 : kPStorageBound) << "p" << where(wp, s.p, ref.p);
  EXPECT_LE(wm.error, 1e-6) << "m" << where(wm, s.m, ref.m);
  EXPECT_LE(wv.error, 1e-6) << "v" << where(wv, s.v, ref.v);
  std::printf(
      "[ %-8s] worst relative error after %d steps: p %.2e  m %.2e  v %.2e; p above 1e-6: %zu of %zu\n",
      std::string(to_string(isa)).c_str(), kSteps, wp.error, wm.error, wv.error, p_above_1e6, n);
}

std::vector<SimdIsa> supported_isas() {
  std::vector<SimdIsa> out;
  for (SimdIsa isa : {SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512})
    if (simd_isa_supported(isa)) out.push_back(isa);
  return out;
}

AdamWParams typical() {
  return {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
}

AdamWParams aggressive() {  // big steps, strong decay, clipping active
  return {.lr = 3e-2f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.1f, .grad_scale = 0.3f};
}

// ---------------------------------------------------------------------------------------------

TEST(AdamWAccuracy, MatchesDoubleReferenceWithin1e6AfterTwentyStepsBf16Gradients) {
  const Problem problem(9 * 2000 + 5, 1);
  for (const AdamWParams& a : {typical(), aggressive()})
    for (SimdIsa isa : supported_isas()) expect_matches_reference(a, problem, problem.grads, isa);
}

TEST(AdamWAccuracy, MatchesDoubleReferenceWithFp32StateWithin1e6OnEveryElement) {
  const Problem problem(9 * 2000 + 5, 1);
  for (const AdamWParams& a : {typical(), aggressive()})
    for (SimdIsa isa : supported_isas()) {
      expect_matches_reference(a, problem, problem.grads, isa, true);
      expect_matches_reference(a, problem, problem.grads_fp32, isa, true);
    }
}

TEST(AdamWAccuracy, MatchesDoubleReferenceWithin1e6AfterTwentyStepsFp32Gradients) {
  const Problem problem(9 * 2000 + 5, 2);
  for (const AdamWParams& a : {typical(), aggressive()})
    for (SimdIsa isa : supported_isas()) expect_matches_reference(a, problem, problem.grads_fp32, isa);
}

TEST(AdamWAccuracy, HugeRawGradientsScaledByClipFactorMatchReference) {
  // Raw gradients near 1e30 (bf16 holds them) brought back to O(1) by the clipping scale.
  std::mt19937_64 rng(3);
  Problem problem(4096, 3);
  for (auto& step : problem.grads)
    for (bf16& g : step)
      g = float_to_bf16(static_cast<float>(std::normal_distribution<double>(0.0, 1e30)(rng)));
  AdamWParams a = typical();
  a.grad_scale = 1e-30f;
  for (SimdIsa isa : supported_isas()) expect_matches_reference(a, problem, problem.grads, isa);
}

TEST(AdamWAccuracy, SecondMomentOverflowFreezesTheStepButKeepsWeightsFinite) {
  // An effective gradient of 1e30 makes g*g overflow fp32, as it does in PyTorch's fp32 AdamW:
  // v becomes inf, the adaptive step becomes 0, and only weight decay moves p. It must not
  // turn p into inf or NaN.
  for (SimdIsa isa : supported_isas()) {
    std::vector<float> p(21, 0.5f), m(21, 0.0f), v(21, 0.0f);
    std::vector<bf16> g(21, float_to_bf16(1e30f)), out(21);
    AdamWParams a = typical();
    adamw_update_bf16grad(a, p.data(), m.data(), v.data(), g.data(), out.data(), p.size(), isa);
    for (std::size_t i = 0; i < p.size(); ++i) {
      EXPECT_TRUE(std::isinf(v[i])) << to_string(isa);
      EXPECT_TRUE(std::isfinite(m[i])) << to_string(isa);
      EXPECT_EQ(p[i], 0.5f - a.lr * a.weight_decay * 0.5f) << to_string(isa);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Variants, threads, alignment: all must give the scalar variant's bits.

std::int64_t ulp_distance(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  // Map the sign-magnitude encoding onto a monotonic integer line.
  const std::int64_t la = ia < 0 ? -static_cast<std::int64_t>(ia & 0x7fffffff) : ia;
  const std::int64_t lb = ib < 0 ? -static_cast<std::int64_t>(ib & 0x7fffffff) : ib;
  return std::abs(la - lb);
}

template <class Grad>
State run_steps(const Problem& problem, const std::vector<std::vector<Grad>>& grads, const AdamWParams& a,
                SimdIsa isa, ThreadPool* pool = nullptr) {
  State s(problem.p0);
  const std::size_t n = s.p.size();
  for (int t = 0; t < kSteps; ++t) {
    const AdamWParams at = params_for_step(a, t);
    // The entry point for Grad, with the pool as its first argument when there is one.
    const auto update = [&](auto&... on_pool) {
      if constexpr (std::is_same_v<Grad, bf16>)
        adamw_update_bf16grad(on_pool..., at, s.p.data(), s.m.data(), s.v.data(), grads[t].data(),
                              s.p_out.data(), n, isa);
      else
        adamw_update_fp32grad(on_pool..., at, s.p.data(), s.m.data(), s.v.data(), grads[t].data(),
                              s.p_out.data(), n, isa);
    };
    if (pool)
      update(*pool);
    else
      update();
  }
  return s;
}

void expect_within_ulps(const State& got, const State& want, std::int64_t max_ulps, const std::string& what) {
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < want.p.size(); ++i) {
    worst = std::max({worst, ulp_distance(got.p[i], want.p[i]), ulp_distance(got.m[i], want.m[i]),
                      ulp_distance(got.v[i], want.v[i])});
  }
  EXPECT_LE(worst, max_ulps) << what;
}

bool bitwise_equal(const State& a, const State& b) {
  const std::size_t n = a.p.size();
  return b.p.size() == n && std::memcmp(a.p.data(), b.p.data(), n * 4) == 0 &&
         std::memcmp(a.m.data(), b.m.data(), n * 4) == 0 && std::memcmp(a.v.data(), b.v.data(), n * 4) == 0 &&
         std::memcmp(a.p_out.data(), b.p_out.data(), n * 2) == 0;
}

class AdamWVariant : public testing::SimdVariantTest {};

TEST_P(AdamWVariant, AgreesWithScalarWithinTwoUlpsAfterTwentySteps) {
  const Problem problem(9 * 1000 + 13, 4);
  for (const AdamWParams& a : {typical(), aggressive()}) {
    expect_within_ulps(run_steps(problem, problem.grads, a, GetParam()),
                       run_steps(problem, problem.grads, a, SimdIsa::scalar), 2, "bf16 gradients");
    expect_within_ulps(run_steps(problem, problem.grads_fp32, a, GetParam()),
                       run_steps(problem, problem.grads_fp32, a, SimdIsa::scalar), 2, "fp32 gradients");
  }
}

TEST_P(AdamWVariant, IsBitwiseIdenticalToScalar) {
  const Problem problem(9 * 1000 + 13, 5);
  for (const AdamWParams& a : {typical(), aggressive()}) {
    EXPECT_TRUE(bitwise_equal(run_steps(problem, problem.grads, a, GetParam()),
                              run_steps(problem, problem.grads, a, SimdIsa::scalar)));
    EXPECT_TRUE(bitwise_equal(run_steps(problem, problem.grads_fp32, a, GetParam()),
                              run_steps(problem, problem.grads_fp32, a, SimdIsa::scalar)));
  }
}

TEST_P(AdamWVariant, Bf16CopyIsRoundToNearestEvenOfUpdatedWeights) {
  const Problem problem(9 * 1000 + 13, 6);
  const State s = run_steps(problem, problem.grads, aggressive(), GetParam());
  for (std::size_t i = 0; i < s.p.size(); ++i) ASSERT_EQ(s.p_out[i].bits, float_to_bf16(s.p[i]).bits) << i;
}

TEST_P(AdamWVariant, OddLengthsAndUnalignedPointersGiveTheSameBits) {
  for (std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{15}, std::size_t{17}, std::size_t{1000003}}) {
    const Problem problem(n, 7 + n);
    const State want = run_steps(problem, problem.grads, typical(), SimdIsa::scalar);
    // Shift every array by one element so no pointer is vector- or even 8-byte aligned.
    std::vector<float> p(n + 1), m(n + 1, 0.0f), v(n + 1, 0.0f);
    std::vector<bf16> g(n + 1), out(n + 1);
    std::copy(problem.p0.begin(), problem.p0.end(), p.begin() + 1);
    for (int t = 0; t < kSteps; ++t) {
      std::copy(problem.grads[t].begin(), problem.grads[t].end(), g.begin() + 1);
      adamw_update_bf16grad(params_for_step(typical(), t), p.data() + 1, m.data() + 1, v.data() + 1,
                            g.data() + 1, out.data() + 1, n, GetParam());
    }
    EXPECT_EQ(std::memcmp(p.data() + 1, want.p.data(), n * 4), 0) << "n=" << n;
    EXPECT_EQ(std::memcmp(m.data() + 1, want.m.data(), n * 4), 0) << "n=" << n;
    EXPECT_EQ(std::memcmp(v.data() + 1, want.v.data(), n * 4), 0) << "n=" << n;
    EXPECT_EQ(std::memcmp(out.data() + 1, want.p_out.data(), n * 2), 0) << "n=" << n;
  }
}

TEST_P(AdamWVariant, NullBf16CopyLeavesStateUnchangedAndWritesNothingExtra) {
  const std::size_t n = 1000;
  const Problem problem(n, 8);
  State with(problem.p0), without(problem.p0);
  without.p_out.assign(n, bf16{0x1234});
  adamw_update_bf16grad(typical(), with.p.data(), with.m.data(), with.v.data(), problem.grads[0].data(),
                        with.p_out.data(), n, GetParam());
  adamw_update_bf16grad(typical(), without.p.data(), without.m.data(), without.v.data(),
                        problem.grads[0].data(), nullptr, n, GetParam());
  EXPECT_EQ(with.p, without.p);
  EXPECT_EQ(std::memcmp(with.m.data(), without.m.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(with.v.data(), without.v.data(), n * 4), 0);
  for (bf16 b : without.p_out) ASSERT_EQ(b.bits, 0x1234);
}

TEST_P(AdamWVariant, Fp32GradientsHoldingBf16ValuesGiveTheBf16Result) {
  // The baseline (fp32 gradients from storage) and the delayed conversion (bf16 gradients) must
  // produce the same numbers for the same gradient values.
  const Problem problem(5003, 9);
  std::vector<std::vector<float>> widened(kSteps);
  for (int t = 0; t < kSteps; ++t)
    for (bf16 g : problem.grads[t]) widened[t].push_back(bf16_to_float(g));
  EXPECT_TRUE(bitwise_equal(run_steps(problem, problem.grads, typical(), GetParam()),
                            run_steps(problem, widened, typical(), GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Isa, AdamWVariant, testing::simd_variants(), testing::simd_variant_name);

TEST(AdamWThreads, ResultsAreBitwiseIdenticalForOneTwoThreeAndEightThreads) {
  const Problem problem(1000003, 10);
  const State want = run_steps(problem, problem.grads, typical(), SimdIsa::best);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    EXPECT_TRUE(bitwise_equal(run_steps(problem, problem.grads, typical(), SimdIsa::best, &pool), want))
        << threads << " threads, bf16 gradients";
  }
  const State want32 = run_steps(problem, problem.grads_fp32, typical(), SimdIsa::scalar);
  ThreadPool pool(3);
  EXPECT_TRUE(bitwise_equal(run_steps(problem, problem.grads_fp32, typical(), SimdIsa::best, &pool), want32))
      << "3 threads, fp32 gradients";
}

TEST(AdamWThreads, SplittingARangeIntoSubgroupsInAnyOrderGivesTheSameBits) {
  // The offload engine updates subgroups one at a time, in alternating order: updating [0, n)
  // piecewise, backwards, in uneven pieces must equal one call over the whole range.
  const std::size_t n = 100003;
  const Problem problem(n, 11);
  State whole(problem.p0), pieces(problem.p0);
  adamw_update_bf16grad(typical(), whole.p.data(), whole.m.data(), whole.v.data(), problem.grads[0].data(),
                        whole.p_out.data(), n);
  const std::vector<std::size_t> cuts = {0, 5, 4096, 4099, 50001, 77777, n};
  for (std::size_t k = cuts.size() - 1; k-- > 0;) {
    const std::size_t b = cuts[k], len = cuts[k + 1] - b;
    adamw_update_bf16grad(typical(), pieces.p.data() + b, pieces.m.data() + b, pieces.v.data() + b,
                          problem.grads[0].data() + b, pieces.p_out.data() + b, len);
  }
  EXPECT_TRUE(bitwise_equal(whole, pieces));
}

TEST(AdamWParamsCheck, RejectsStepZeroAndBetaOutsideUnitInterval) {
  float p = 1, m = 0, v = 0;
  bf16 g = float_to_bf16(1.0f);
  AdamWParams a;
  a.step = 0;
  EXPECT_THROW(adamw_update_bf16grad(a, &p, &m, &v, &g, nullptr, 1), Error);
  a.step = 1;
  a.beta2 = 1.0f;
  EXPECT_THROW(adamw_update_bf16grad(a, &p, &m, &v, &g, nullptr, 1), Error);
  EXPECT_EQ(p, 1.0f) << "a rejected call must not touch the state";
}

TEST(SimdIsaNames, RoundTripAndRejectUnknown) {
  for (SimdIsa isa : {SimdIsa::best, SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512})
    EXPECT_EQ(parse_simd_isa(to_string(isa)), isa);
  EXPECT_THROW(parse_simd_isa("sse9"), Error);
  EXPECT_NE(best_simd_isa(), SimdIsa::best);
}

}  // namespace
}  // namespace mlpo
