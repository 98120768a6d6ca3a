// AVX2 AdamW with the CRC32C of p, m, v taken in the same pass (adamw_crc.hpp): 8 elements per
// iteration, adamw_lanes_avx2.hpp's update8, as adamw_avx2.cpp. The 32 bytes of
// each array it is about to load continue that array's CRC with the crc32 instruction; each of
// the three 32-byte vectors it stores is folded into its own 256-bit accumulator with
// VPCLMULQDQ (two carry-less products and two xors: the folding of executor/io/crc32c.cpp,
// 32 bytes at a time), which at the end is folded to 128 bits and reduced with the crc32
// instruction. The tail (< 8 elements) runs through the same update on a zero-padded copy and
// its bytes continue each CRC with the crc32 instruction. Compiled with
// -mavx2 -mpclmul -mvpclmulqdq -msse4.2 -ffp-contract=off; called only after the dispatcher
// saw all four. Internal linkage for every helper (adamw_variants.hpp).

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/adamw_lanes_avx2.hpp"
#include "kernels/cpu/adamw_variants.hpp"

namespace mlpo::detail {
namespace {

// x folded 32 bytes forward (k: the by32 pair in both 128-bit lanes) and xored with `next`.
inline __m256i fold32(__m256i x, __m256i k, __m256i next) {
  return _mm256_xor_si256(
      _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00), _mm256_clmulepi64_epi128(x, k, 0x11)), next);
}

// The crc32 instruction's state after the bytes an accumulator holds: its low lane folded 16
// bytes into its high lane, then the 16 bytes through crc32 from a zero state.
inline std::uint64_t reduce(__m256i x, __m128i k16) {
  const __m128i lo = _mm256_castsi256_si128(x), hi = _mm256_extracti128_si256(x, 1);
  const __m128i y = _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(lo, k16, 0x00), _mm_clmulepi64_si128(lo, k16, 0x11)), hi);
  const std::uint64_t c = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(y)));
  return _mm_crc32_u64(c, static_cast<std::uint64_t>(_mm_extract_epi64(y, 1)));
}

// The crc32 instruction's state continued over `count` floats.
inline std::uint64_t continue_crc(std::uint64_t c, const float* f, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t word;
    std::memcpy(&word, f + i, 4);
    c = _mm_crc32_u32(static_cast<std::uint32_t>(c), word);
  }
  return c;
}

inline std::uint64_t load64(const float* f) {
  std::uint64_t w;
  std::memcpy(&w, f, 8);
  return w;
}

// What it loads goes through the crc32 instruction (integer pipe, before the update reads it:
// in and out may be the same arrays), what it stores is folded (carry-less multiplies, beside
// AdamW's divides): the work split over both kinds of units. (All six folded, or all six
// through crc32, measured 1.3x and 1.2x slower: adam_bench's adamw-crc row, docs/benchmarks.md.)
template <class Grad>
void adamw_crc_avx2(const AdamWConstants& constants, const CrcFoldConstants& k, const float* p_in,
                    const float* m_in, const float* v_in, float* p, float* m, float* v, const Grad* grad,
                    bf16* p_out, std::size_t n, std::uint32_t crcs[6]) {
  const Lanes c(constants);
  const std::size_t whole = n / 8 * 8;
  std::uint64_t state[6] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  if (whole > 0) {
    const __m256i k32 =
        _mm256_set_epi64x(static_cast<long long>(k.by32[1]), static_cast<long long>(k.by32[0]),
                          static_cast<long long>(k.by32[1]), static_cast<long long>(k.by32[0]));
    const __m128i k16 = _mm_set_epi64x(static_cast<long long>(k.by16[1]), static_cast<long long>(k.by16[0]));
    const __m256i init = _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, -1);
    std::uint64_t s0 = 0xFFFFFFFFu, s1 = 0xFFFFFFFFu, s2 = 0xFFFFFFFFu;
    for (std::size_t w = 0; w < 8; w += 2) {
      s0 = _mm_crc32_u64(s0, load64(p_in + w));
      s1 = _mm_crc32_u64(s1, load64(m_in + w));
      s2 = _mm_crc32_u64(s2, load64(v_in + w));
    }
    const Block first = update8(c, p_in, m_in, v_in, p, m, v, grad, p_out);
    __m256i a3 = _mm256_xor_si256(first.out[0], init), a4 = _mm256_xor_si256(first.out[1], init),
            a5 = _mm256_xor_si256(first.out[2], init);
    for (std::size_t i = 8; i < whole; i += 8) {
      for (std::size_t w = 0; w < 8; w += 2) {
        s0 = _mm_crc32_u64(s0, load64(p_in + i + w));
        s1 = _mm_crc32_u64(s1, load64(m_in + i + w));
        s2 = _mm_crc32_u64(s2, load64(v_in + i + w));
      }
      const Block b = update8(c, p_in + i, m_in + i, v_in + i, p + i, m + i, v + i, grad + i,
                              p_out ? p_out + i : nullptr);
      a3 = fold32(a3, k32, b.out[0]);
      a4 = fold32(a4, k32, b.out[1]);
      a5 = fold32(a5, k32, b.out[2]);
    }
    state[0] = s0;
    state[1] = s1;
    state[2] = s2;
    state[3] = reduce(a3, k16);
    state[4] = reduce(a4, k16);
    state[5] = reduce(a5, k16);
  }
  if (whole < n) {
    const std::size_t rest = n - whole;
    float tp[8] = {}, tm[8] = {}, tv[8] = {};
    Grad tg[8] = {};
    bf16 to[8] = {};
    std::memcpy(tp, p_in + whole, rest * sizeof(float));
    std::memcpy(tm, m_in + whole, rest * sizeof(float));
    std::memcpy(tv, v_in + whole, rest * sizeof(float));
    std::memcpy(tg, grad + whole, rest * sizeof(Grad));
    state[0] = continue_crc(state[0], tp, rest);
    state[1] = continue_crc(state[1], tm, rest);
    state[2] = continue_crc(state[2], tv, rest);
    update8(c, tp, tm, tv, tp, tm, tv, tg, p_out ? to : nullptr);
    state[3] = continue_crc(state[3], tp, rest);
    state[4] = continue_crc(state[4], tm, rest);
    state[5] = continue_crc(state[5], tv, rest);
    std::memcpy(p + whole, tp, rest * sizeof(float));
    std::memcpy(m + whole, tm, rest * sizeof(float));
    std::memcpy(v + whole, tv, rest * sizeof(float));
    if (p_out) std::memcpy(p_out + whole, to, rest * sizeof(bf16));
  }
  for (int s = 0; s < 6; ++s) crcs[s] = ~static_cast<std::uint32_t>(state[s]);
}

}  // namespace

void adamw_crc_bf16grad_avx2(const AdamWConstants& c, const CrcFoldConstants& k, const float* p_in,
                             const float* m_in, const float* v_in, float* p, float* m, float* v,
                             const bf16* grad, bf16* p_out, std::size_t n, std::uint32_t crcs[6]) {
  adamw_crc_avx2(c, k, p_in, m_in, v_in, p, m, v, grad, p_out, n, crcs);
}

void adamw_crc_fp32grad_avx2(const AdamWConstants& c, const CrcFoldConstants& k, const float* p_in,
                             const float* m_in, const float* v_in, float* p, float* m, float* v,
                             const float* grad, bf16* p_out, std::size_t n, std::uint32_t crcs[6]) {
  adamw_crc_avx2(c, k, p_in, m_in, v_in, p, m, v, grad, p_out, n, crcs);
}

}  // namespace mlpo::detail
