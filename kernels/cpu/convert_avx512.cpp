// AVX-512 bf16 <-> fp32 conversion, 16 elements per iteration, the tail through masked loads and
// stores. Compiled with -mavx512f -mavx512bw -mavx512vl; called only when the CPU has them.

#include <immintrin.h>

#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/convert_lanes.hpp"

namespace mlpo::detail {

void bf16_to_fp32_avx512(const bf16* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, bf16x16_to_fp32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i == n) return;
  const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
  _mm512_mask_storeu_ps(dst + i, k, bf16x16_to_fp32(_mm256_maskz_loadu_epi16(k, src + i)));
}

void fp32_to_bf16_avx512(const float* src, bf16* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtepi32_epi16(fp32x16_to_bf16_lanes(_mm512_loadu_ps(src + i))));
  if (i == n) return;
  const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
  _mm512_mask_cvtepi32_storeu_epi16(dst + i, k, fp32x16_to_bf16_lanes(_mm512_maskz_loadu_ps(k, src + i)));
}

}  // namespace mlpo::detail
