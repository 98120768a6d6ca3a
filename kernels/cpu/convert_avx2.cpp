// AVX2 bf16 <-> fp32 conversion, 8 elements per iteration; the tail goes through a zero-padded
// stack block and the same code. Compiled with -mavx2; called only when the CPU has AVX2.

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/convert_lanes.hpp"

namespace mlpo::detail {

void bf16_to_fp32_avx2(const bf16* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, bf16x8_to_fp32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i == n) return;
  bf16 in[8] = {};
  float out[8];
  std::memcpy(in, src + i, (n - i) * sizeof(bf16));
  _mm256_storeu_ps(out, bf16x8_to_fp32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
  std::memcpy(dst + i, out, (n - i) * sizeof(float));
}

void fp32_to_bf16_avx2(const float* src, bf16* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), fp32x8_to_bf16(_mm256_loadu_ps(src + i)));
  if (i == n) return;
  float in[8] = {};
  bf16 out[8] = {};
  std::memcpy(in, src + i, (n - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), fp32x8_to_bf16(_mm256_loadu_ps(in)));
  std::memcpy(dst + i, out, (n - i) * sizeof(bf16));
}

}  // namespace mlpo::detail
