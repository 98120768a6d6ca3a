#pragma once
// Shared pieces of the op tests: random inputs, central finite differences, the error
// measure and its tolerances, a runner that moves std::vector<double> in and out of a
// backend's tensors of any storage type (BackendRunner; OpRunner for the CPU backend), and
// attention forward+backward on a runner (run_attention), for the CPU and the CUDA op tests.
//
// Error measure: normalized_error(got, want) = max_i |got_i - want_i| / max_i |want_i|.
// Tolerances for CpuBackend vs the double reference (run on the same inputs, already rounded
// to the storage type, so only the op's own rounding is measured):
//   f64  1e-10  - only summation order differs;
//   f32  3e-5   - fp32 accumulation over at most a few hundred terms;
//   bf16 1e-2   - outputs are rounded to bf16 once (8 significant bits: half an ulp is
//                 2^-9 ~ 2e-3 of the value), fp32 arithmetic inside; 1e-2 is ~2.5 ulps of
//                 the largest element and still catches any wrong formula by orders of
//                 magnitude.
// Finite differences of the double reference use h = 1e-5 (central): truncation error
// ~h^2 and round-off ~1e-16/h, so the reference backward must match to 1e-6.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "tests/kernels/reference_double.hpp"

namespace mlpo::testing {

using reference::Tokens;
using reference::Vec;

inline constexpr DType kStorageTypes[] = {DType::bf16, DType::f32, DType::f64};
inline constexpr DType kGpuStorageTypes[] = {DType::bf16, DType::f32};  // f64 is the CPU's test-only type
inline constexpr double kFiniteDifferenceTolerance = 1e-6;

inline double tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return 1e-10;
    case DType::f32:
      return 3e-5;
    default:
      return 1e-2;
  }
}

inline Vec random_vec(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Vec v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

inline Tokens random_tokens(std::size_t n, int vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tokens t(n);
  for (auto& x : t) x = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab));
  return t;
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences: grad_i = (f(x + h e_i) - f(x - h e_i)) / 2h.
inline Vec numeric_gradient(const std::function<double(const Vec&)>& f, Vec x, double h = 1e-5) {
  Vec g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f(x);
    x[i] = keep - h;
    const double down = f(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// max |got - want| / max |want|; infinite if sizes differ or anything is NaN.
inline double normalized_error(const Vec& got, const Vec& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    err = std::max(err, d);
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

// a . b / (|a| |b|): 1 when got points exactly along want; 0 for a zero vector.
inline double cosine(const Vec& a, const Vec& b) {
  const double na = std::sqrt(dot(a, a)), nb = std::sqrt(dot(b, b));
  return na > 0 && nb > 0 ? dot(a, b) / (na * nb) : 0.0;
}

// The values v takes once stored as type t.
inline Vec rounded(const Vec& v, DType t) {
  Vec r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::bf16)
      r[i] = bf16_to_float(float_to_bf16(static_cast<float>(v[i])));
    else if (t == DType::f32)
      r[i] = static_cast<float>(v[i]);
    else
      r[i] = v[i];
  }
  return r;
}

inline Vec plus(const Vec& a, const Vec& b) {
  Vec r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] + b[i];
  return r;
}

// Moves std::vector<double> in and out of any backend's tensors, through host copies, for every
// storage type the backend holds. Owns the backend (and the CPU backend's threads).
class BackendRunner {
 public:
  BackendRunner(std::unique_ptr<ThreadPool> pool, std::unique_ptr<Backend> backend)
      : pool_(std::move(pool)), backend_(std::move(backend)) {}

  Backend& backend() { return *backend_; }

  Tensor upload(const Vec& v, DType t, std::initializer_list<std::int64_t> dims) {
    Tensor x = empty(t, dims);
    EXPECT_EQ(static_cast<std::size_t>(x.numel()), v.size());
    switch (t) {
      case DType::bf16: {
        std::vector<bf16> h(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(static_cast<float>(v[i]));
        backend_->copy_from_host(x, h.data());
        break;
      }
      case DType::f32: {
        const std::vector<float> h(v.begin(), v.end());
        backend_->copy_from_host(x, h.data());
        break;
      }
      case DType::f64:
        backend_->copy_from_host(x, v.data());
        break;
      case DType::i32:
        ADD_FAILURE() << "use upload_tokens";
        break;
    }
    return x;
  }

  Tensor upload_tokens(const Tokens& tokens) {
    Tensor t = empty(DType::i32, {static_cast<std::int64_t>(tokens.size())});
    backend_->copy_from_host(t, tokens.data());
    return t;
  }

  // An output tensor pre-filled with NaN, so an element an op forgets to write shows up.
  Tensor empty(DType t, std::initializer_list<std::int64_t> dims) {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    buffers_.push_back(backend_->allocate(t, n));
    Tensor x = buffers_.back().view(t, dims);
    if (t != DType::i32) backend_->fill(x, std::numeric_limits<double>::quiet_NaN());
    return x;
  }

  Vec download(const Tensor& x) {
    Vec v(static_cast<std::size_t>(x.numel()));
    if (x.dtype == DType::bf16) {
      std::vector<bf16> h(v.size());
      backend_->copy_to_host(h.data(), x);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(h[i]);
    } else if (x.dtype == DType::f32) {
      std::vector<float> h(v.size());
      backend_->copy_to_host(h.data(), x);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = h[i];
    } else {
      backend_->copy_to_host(v.data(), x);
    }
    return v;
  }

 private:
  std::unique_ptr<ThreadPool> pool_;  // the CPU backend's threads (none for a GPU backend)
  std::unique_ptr<Backend> backend_;
  std::vector<DeviceBuffer> buffers_;  // declared last: released before the backend goes
};

inline BackendRunner cpu_runner(unsigned threads, cpu::GemmPath path) {
  auto pool = std::make_unique<ThreadPool>(threads);
  auto backend = std::make_unique<CpuBackend>(*pool, CpuBackendOptions{2, path});
  return BackendRunner(std::move(pool), std::move(backend));
}

// The CPU backend with `threads` threads and GEMM `path` (for CPU-only properties: thread
// counts, GEMM paths, f64).
class OpRunner : public BackendRunner {
 public:
  explicit OpRunner(unsigned threads = 2, cpu::GemmPath path = cpu::GemmPath::blas)
      : BackendRunner(cpu_runner(threads, path)) {}
};

// A two-input reference op's backward (da, db for the upstream gradient R) against central
// differences of dot(forward(a, b), R) in each input, to kFiniteDifferenceTolerance.
inline void expect_backward_matches_finite_differences(
    const std::function<Vec(const Vec&, const Vec&)>& forward, const Vec& a, const Vec& b, const Vec& R,
    const Vec& da, const Vec& db) {
  EXPECT_LT(normalized_error(da, numeric_gradient([&](const Vec& v) { return dot(forward(v, b), R); }, a)),
            kFiniteDifferenceTolerance);
  EXPECT_LT(normalized_error(db, numeric_gradient([&](const Vec& v) { return dot(forward(a, v), R); }, b)),
            kFiniteDifferenceTolerance);
}

inline DType acc_type(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// Attention forward and backward on `run`'s backend in storage type `t` (the log-sum-exp in
// acc_type(t)): the output, the log-sum-exp and the three input gradients.
struct AttentionRun {
  Vec out, lse, dq, dk, dv;
};

inline AttentionRun run_attention(BackendRunner& run, DType t, const Vec& q, const Vec& k, const Vec& v,
                                  const Vec& dout, const reference::AttentionShape& s) {
  Tensor tq = run.upload(q, t, {s.B, s.T, s.Hq, s.D}), tk = run.upload(k, t, {s.B, s.T, s.Hkv, s.D});
  Tensor tv = run.upload(v, t, {s.B, s.T, s.Hkv, s.D}), out = run.empty(t, {s.B, s.T, s.Hq, s.D});
  Tensor lse = run.empty(acc_type(t), {s.B, s.Hq, s.T});
  run.backend().attention_forward(out, lse, tq, tk, tv);
  Tensor dq = run.empty(t, {s.B, s.T, s.Hq, s.D}), dk = run.empty(t, {s.B, s.T, s.Hkv, s.D});
  Tensor dv = run.empty(t, {s.B, s.T, s.Hkv, s.D});
  run.backend().attention_backward(dq, dk, dv, run.upload(dout, t, {s.B, s.T, s.Hq, s.D}), tq, tk, tv, out,
                                   lse);
  return {run.download(out), run.download(lse), run.download(dq), run.download(dk), run.download(dv)};
}

}  // namespace mlpo::testing
