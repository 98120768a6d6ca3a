#pragma once
// Internal to the AVX2 translation units of kernels/cpu (adamw_avx2.cpp, adamw_crc_avx2.cpp):
// AdamW on 8 lanes, the operation order of adamw_variants.hpp. Everything here has internal
// linkage (see adamw_variants.hpp): each unit gets its own copy, compiled with its own flags.

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/convert_lanes.hpp"

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

// What one step stored in p, m, v, as integer vectors (for a CRC's folding).
struct Stored {
  __m256i p, m, v;
};

// One step of 8 elements, reading from the *_in arrays and writing to p, m, v (the same arrays or
// others); returns what it stored.
template <class Grad>
inline Stored update8(const Lanes& c, const float* p_in, const float* m_in, const float* v_in, float* p,
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
  return {_mm256_castps_si256(pi), _mm256_castps_si256(mi), _mm256_castps_si256(vi)};
}

// The last `rest` (< 8) elements: copied into zero-padded stack blocks, run through update8 and
// copied back, so they get the very same instructions.
template <class Grad>
inline void update_tail(const Lanes& c, const float* p_in, const float* m_in, const float* v_in, float* p,
                        float* m, float* v, const Grad* grad, bf16* p_out, std::size_t rest) {
  float tp[8] = {}, tm[8] = {}, tv[8] = {};
  Grad tg[8] = {};
  bf16 to[8] = {};
  std::memcpy(tp, p_in, rest * sizeof(float));
  std::memcpy(tm, m_in, rest * sizeof(float));
  std::memcpy(tv, v_in, rest * sizeof(float));
  std::memcpy(tg, grad, rest * sizeof(Grad));
  update8(c, tp, tm, tv, tp, tm, tv, tg, p_out ? to : nullptr);
  std::memcpy(p, tp, rest * sizeof(float));
  std::memcpy(m, tm, rest * sizeof(float));
  std::memcpy(v, tv, rest * sizeof(float));
  if (p_out) std::memcpy(p_out, to, rest * sizeof(bf16));
}

#endif

}  // namespace
}  // namespace mlpo::detail
