// AVX2 AdamW: 8 elements per iteration. The tail (< 8 elements) is copied into zero-padded stack
// blocks, run through the same 8-lane code and copied back, so it gets the very same
// instructions. Compiled with -mavx2 -ffp-contract=off; called only after the dispatcher saw AVX2.
// Operation order: adamw_variants.hpp.

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/adamw_variants.hpp"
#include "kernels/cpu/convert_lanes.hpp"

namespace mlpo::detail {
namespace {

struct Lanes {
  __m256 beta1, one_minus_beta1, beta2, one_minus_beta2, bc1, bc2, lr, lr_times_wd, eps, grad_scale;
  explicit Lanes(const AdamWConstants& c)
      : beta1(_mm256_set1_ps(c.beta1)),
        one_minus_beta1(_mm256_set1_ps(c.one_minus_beta1)),
        beta2(_mm256_set1_ps(c.beta2)),
        one_minus_beta2(_mm256_set1_ps(c.one_minus_beta2)),
        bc1(_mm256_set1_ps(c.bias_correction1)),
        bc2(_mm256_set1_ps(c.bias_correction2)),
        lr(_mm256_set1_ps(c.lr)),
        lr_times_wd(_mm256_set1_ps(c.lr_times_wd)),
        eps(_mm256_set1_ps(c.eps)),
        grad_scale(_mm256_set1_ps(c.grad_scale)) {}
};

inline __m256 load_grad(const float* g) { return _mm256_loadu_ps(g); }
inline __m256 load_grad(const bf16* g) {
  return bf16x8_to_fp32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
}

template <class Grad>
inline void update8(const Lanes& c, float* p, float* m, float* v, const Grad* grad, bf16* p_out) {
  const __m256 g = _mm256_mul_ps(load_grad(grad), c.grad_scale);
  const __m256 mi =
      _mm256_add_ps(_mm256_mul_ps(c.beta1, _mm256_loadu_ps(m)), _mm256_mul_ps(c.one_minus_beta1, g));
  const __m256 vi = _mm256_add_ps(_mm256_mul_ps(c.beta2, _mm256_loadu_ps(v)),
                                  _mm256_mul_ps(c.one_minus_beta2, _mm256_mul_ps(g, g)));
  const __m256 mhat = _mm256_div_ps(mi, c.bc1);
  const __m256 vhat = _mm256_div_ps(vi, c.bc2);
  const __m256 step = _mm256_mul_ps(c.lr, _mm256_div_ps(mhat, _mm256_add_ps(_mm256_sqrt_ps(vhat), c.eps)));
  const __m256 pold = _mm256_loadu_ps(p);
  const __m256 pi = _mm256_sub_ps(pold, _mm256_add_ps(_mm256_mul_ps(c.lr_times_wd, pold), step));
  _mm256_storeu_ps(m, mi);
  _mm256_storeu_ps(v, vi);
  _mm256_storeu_ps(p, pi);
  if (p_out) _mm_storeu_si128(reinterpret_cast<__m128i*>(p_out), fp32x8_to_bf16(pi));
}

template <class Grad>
void adamw_avx2(const AdamWConstants& constants, float* p, float* m, float* v, const Grad* grad, bf16* p_out,
                std::size_t n) {
  const Lanes c(constants);
  std::size_t i = 0;
  if (p_out) {
    for (; i + 8 <= n; i += 8) update8(c, p + i, m + i, v + i, grad + i, p_out + i);
  } else {
    for (; i + 8 <= n; i += 8) update8(c, p + i, m + i, v + i, grad + i, nullptr);
  }
  if (i == n) return;
  const std::size_t rest = n - i;
  float tp[8] = {}, tm[8] = {}, tv[8] = {};
  Grad tg[8] = {};
  bf16 to[8] = {};
  std::memcpy(tp, p + i, rest * sizeof(float));
  std::memcpy(tm, m + i, rest * sizeof(float));
  std::memcpy(tv, v + i, rest * sizeof(float));
  std::memcpy(tg, grad + i, rest * sizeof(Grad));
  update8(c, tp, tm, tv, tg, p_out ? to : nullptr);
  std::memcpy(p + i, tp, rest * sizeof(float));
  std::memcpy(m + i, tm, rest * sizeof(float));
  std::memcpy(v + i, tv, rest * sizeof(float));
  if (p_out) std::memcpy(p_out + i, to, rest * sizeof(bf16));
}

}  // namespace

void adamw_bf16grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const bf16* grad, bf16* p_out,
                         std::size_t n) {
  adamw_avx2(c, p, m, v, grad, p_out, n);
}

void adamw_fp32grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const float* grad,
                         bf16* p_out, std::size_t n) {
  adamw_avx2(c, p, m, v, grad, p_out, n);
}

}  // namespace mlpo::detail
