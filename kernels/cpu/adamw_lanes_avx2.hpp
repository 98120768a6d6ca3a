#pragma once
// Internal to the AVX2 translation units of kernels/cpu (adamw_avx2.cpp, adamw_crc_avx2.cpp):
// AdamW on 8 lanes, the operation order of adamw_variants.hpp. Everything here has internal
// linkage (see adamw_variants.hpp): each unit gets its own copy, compiled with its own flags.

#include <immintrin.h>

#include "kernels/cpu/adamw_variants.hpp"
#include "kernels/cpu/convert_lanes.hpp"

namespace mlpo::detail {
namespace {

#if defined(__AVX2__)
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

// What one iteration loaded and stored, as integer vectors for the folding.
struct Block {
  __m256i in[3], out[3];  // p, m, v
};

// One step of 8 elements, reading from the *_in arrays and writing to p, m, v (the same arrays or
// others); returns what it loaded and stored.
template <class Grad>
inline Block update8(const Lanes& c, const float* p_in, const float* m_in, const float* v_in, float* p,
                     float* m, float* v, const Grad* grad, bf16* p_out) {
  const __m256 mold = _mm256_loadu_ps(m_in), vold = _mm256_loadu_ps(v_in), pold = _mm256_loadu_ps(p_in);
  const __m256 g = _mm256_mul_ps(load_grad(grad), c.grad_scale);
  const __m256 mi = _mm256_add_ps(_mm256_mul_ps(c.beta1, mold), _mm256_mul_ps(c.one_minus_beta1, g));
  const __m256 vi =
      _mm256_add_ps(_mm256_mul_ps(c.beta2, vold), _mm256_mul_ps(c.one_minus_beta2, _mm256_mul_ps(g, g)));
  const __m256 mhat = _mm256_div_ps(mi, c.bc1);
  const __m256 vhat = _mm256_div_ps(vi, c.bc2);
  const __m256 step = _mm256_mul_ps(c.lr, _mm256_div_ps(mhat, _mm256_add_ps(_mm256_sqrt_ps(vhat), c.eps)));
  const __m256 pi = _mm256_sub_ps(pold, _mm256_add_ps(_mm256_mul_ps(c.lr_times_wd, pold), step));
  _mm256_storeu_ps(m, mi);
  _mm256_storeu_ps(v, vi);
  _mm256_storeu_ps(p, pi);
  if (p_out) _mm_storeu_si128(reinterpret_cast<__m128i*>(p_out), fp32x8_to_bf16(pi));
  return {{_mm256_castps_si256(pold), _mm256_castps_si256(mold), _mm256_castps_si256(vold)},
          {_mm256_castps_si256(pi), _mm256_castps_si256(mi), _mm256_castps_si256(vi)}};
}

#endif

}  // namespace
}  // namespace mlpo::detail
