// AVX-512 AdamW: 16 elements per iteration, the tail through masked loads and stores so it runs
// the very same instructions. Compiled with -mavx512f -mavx512bw -mavx512vl -ffp-contract=off;
// called only after the dispatcher saw those features. Operation order: adamw_variants.hpp.

#include <immintrin.h>

#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/convert_lanes.hpp"

namespace mlpo::detail {
namespace {

struct Lanes {
  __m512 beta1, one_minus_beta1, beta2, one_minus_beta2, bc1, bc2, lr, lr_times_wd, eps, grad_scale;
  explicit Lanes(const AdamWConstants& c)
      : beta1(_mm512_set1_ps(c.beta1)),
        one_minus_beta1(_mm512_set1_ps(c.one_minus_beta1)),
        beta2(_mm512_set1_ps(c.beta2)),
        one_minus_beta2(_mm512_set1_ps(c.one_minus_beta2)),
        bc1(_mm512_set1_ps(c.bias_correction1)),
        bc2(_mm512_set1_ps(c.bias_correction2)),
        lr(_mm512_set1_ps(c.lr)),
        lr_times_wd(_mm512_set1_ps(c.lr_times_wd)),
        eps(_mm512_set1_ps(c.eps)),
        grad_scale(_mm512_set1_ps(c.grad_scale)) {}
};

inline __m512 load_grad(const float* g, __mmask16 k) { return _mm512_maskz_loadu_ps(k, g); }
inline __m512 load_grad(const bf16* g, __mmask16 k) {
  return bf16x16_to_fp32(_mm256_maskz_loadu_epi16(k, g));
}

// Updates elements [i, i+16) selected by mask k.
template <class Grad>
inline void update16(const Lanes& c, float* p, float* m, float* v, const Grad* grad, bf16* p_out,
                     __mmask16 k) {
  const __m512 g = _mm512_mul_ps(load_grad(grad, k), c.grad_scale);
  const __m512 mi =
      _mm512_add_ps(_mm512_mul_ps(c.beta1, _mm512_maskz_loadu_ps(k, m)), _mm512_mul_ps(c.one_minus_beta1, g));
  const __m512 vi = _mm512_add_ps(_mm512_mul_ps(c.beta2, _mm512_maskz_loadu_ps(k, v)),
                                  _mm512_mul_ps(c.one_minus_beta2, _mm512_mul_ps(g, g)));
  const __m512 mhat = _mm512_div_ps(mi, c.bc1);
  const __m512 vhat = _mm512_div_ps(vi, c.bc2);
  const __m512 step = _mm512_mul_ps(c.lr, _mm512_div_ps(mhat, _mm512_add_ps(_mm512_sqrt_ps(vhat), c.eps)));
  const __m512 pold = _mm512_maskz_loadu_ps(k, p);
  const __m512 pi = _mm512_sub_ps(pold, _mm512_add_ps(_mm512_mul_ps(c.lr_times_wd, pold), step));
  _mm512_mask_storeu_ps(m, k, mi);
  _mm512_mask_storeu_ps(v, k, vi);
  _mm512_mask_storeu_ps(p, k, pi);
  if (p_out) _mm512_mask_cvtepi32_storeu_epi16(p_out, k, fp32x16_to_bf16_lanes(pi));
}

template <class Grad>
void adamw_avx512(const AdamWConstants& constants, float* p, float* m, float* v, const Grad* grad,
                  bf16* p_out, std::size_t n) {
  const Lanes c(constants);
  const __mmask16 all = 0xffff;
  std::size_t i = 0;
  if (p_out) {
    for (; i + 16 <= n; i += 16) update16(c, p + i, m + i, v + i, grad + i, p_out + i, all);
  } else {
    for (; i + 16 <= n; i += 16) update16(c, p + i, m + i, v + i, grad + i, nullptr, all);
  }
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    update16(c, p + i, m + i, v + i, grad + i, p_out ? p_out + i : nullptr, tail);
  }
}

}  // namespace

void adamw_bf16grad_avx512(const AdamWConstants& c, float* p, float* m, float* v, const bf16* grad,
                           bf16* p_out, std::size_t n) {
  adamw_avx512(c, p, m, v, grad, p_out, n);
}

void adamw_fp32grad_avx512(const AdamWConstants& c, float* p, float* m, float* v, const float* grad,
                           bf16* p_out, std::size_t n) {
  adamw_avx512(c, p, m, v, grad, p_out, n);
}

}  // namespace mlpo::detail
