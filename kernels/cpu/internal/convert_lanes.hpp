#pragma once
// Internal to the ISA translation units of kernels/cpu: bf16 <-> fp32 conversion of one vector
// register, integer-only so it is exact and matches mlpo::float_to_bf16 bit for bit (round to
// nearest even, NaN -> quiet NaN, denormals kept). The hardware VCVTNEPS2BF16 is not used: it
// flushes denormal inputs to zero. Everything here has internal linkage (see adamw_variants.hpp).

#include <immintrin.h>

namespace {

#if defined(__AVX2__)
// 8 bf16 (16 bytes) -> 8 fp32.
inline __m256 bf16x8_to_fp32(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// 8 fp32 -> 8 bf16 (16 bytes).
inline __m128i fp32x8_to_bf16(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));  // both >= 0
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet, is_nan);
  // Values are < 2^16, so the signed-to-unsigned saturating pack is exact.
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}
#endif

#if defined(__AVX512F__)
// 16 bf16 (32 bytes) -> 16 fp32.
inline __m512 bf16x16_to_fp32(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// 16 fp32 -> 16 bf16 held in the low 16 bits of each 32-bit lane; narrow with
// _mm512_cvtepi32_epi16 or the masked store _mm512_mask_cvtepi32_storeu_epi16.
inline __m512i fp32x16_to_bf16_lanes(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                   _mm512_set1_epi32(0x7f800000));
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  return _mm512_mask_or_epi32(rounded, is_nan, high, _mm512_set1_epi32(0x40));
}
#endif

}  // namespace
