// AVX2 AdamW with the CRC32C of p, m, v taken in the same pass (adamw_crc.hpp): 8 elements per
// iteration, adamw_lanes_avx2.hpp's update8 and update_tail, as adamw_avx2.cpp. The 32 bytes of
// each array it is about to load continue that array's CRC with the crc32 instruction, and so
// do the 32 bytes of v it stored (read back from L1); the stored vectors of p and m are each
// folded into their own 256-bit accumulator with VPCLMULQDQ (two carry-less products and two
// xors: the folding of executor/io/crc32c.cpp, 32 bytes at a time), which at the end is folded
// to 128 bits and reduced with the crc32 instruction. The tail's bytes (< 8 elements) continue
// each CRC with the crc32 instruction. Compiled with -mavx2 -mpclmul -mvpclmulqdq -msse4.2
// -ffp-contract=off; called only after the dispatcher saw all four. Internal linkage for every
// helper (adamw_variants.hpp).

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/internal/adamw_lanes_avx2.hpp"
#include "kernels/cpu/internal/adamw_variants.hpp"

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

// The work split over both kinds of units: 16 crc32 instructions an iteration on the integer
// pipes (what it loads, before the update reads it: in and out may be the same arrays; and
// the v it stored) and 4 carry-less multiplies on the vector pipes (the p and m it stored),
// which AdamW's multiplies and divides also use. On this project's Zen 3 VM (docs/benchmarks.md,
// 2026-12-07) the crc32 instruction and a 256-bit VPCLMULQDQ each take 8 bytes a cycle; this
// split measured 6-7 % (2 threads) to 15-20 % (1 thread) faster than folding all three stored
// arrays, and folding only p (20 crc32) was no faster. (All six folded, or all six through
// crc32, measured 1.3x and 1.2x slower than the three-folded split.)
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
    // The initial state (all ones) goes into the first 4 bytes of each folded stream; an
    // accumulator of zeros folds to zeros, so the first block is just `init ^ block`.
    __m256i init = _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, -1);
    __m256i ap = _mm256_setzero_si256(), am = ap;
    for (std::size_t i = 0; i < whole; i += 8) {
      for (std::size_t w = 0; w < 8; w += 2) {
        state[0] = _mm_crc32_u64(state[0], load64(p_in + i + w));
        state[1] = _mm_crc32_u64(state[1], load64(m_in + i + w));
        state[2] = _mm_crc32_u64(state[2], load64(v_in + i + w));
      }
      const Stored b = update8(c, p_in + i, m_in + i, v_in + i, p + i, m + i, v + i, grad + i,
                               p_out ? p_out + i : nullptr);
      ap = fold32(ap, k32, _mm256_xor_si256(b.p, init));
      am = fold32(am, k32, _mm256_xor_si256(b.m, init));
      for (std::size_t w = 0; w < 8; w += 2) state[5] = _mm_crc32_u64(state[5], load64(v + i + w));
      init = _mm256_setzero_si256();
    }
    state[3] = reduce(ap, k16);
    state[4] = reduce(am, k16);
  }
  if (whole < n) {
    const std::size_t rest = n - whole;
    state[0] = continue_crc(state[0], p_in + whole, rest);
    state[1] = continue_crc(state[1], m_in + whole, rest);
    state[2] = continue_crc(state[2], v_in + whole, rest);
    update_tail(c, p_in + whole, m_in + whole, v_in + whole, p + whole, m + whole, v + whole, grad + whole,
                p_out ? p_out + whole : nullptr, rest);
    state[3] = continue_crc(state[3], p + whole, rest);
    state[4] = continue_crc(state[4], m + whole, rest);
    state[5] = continue_crc(state[5], v + whole, rest);
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
