#pragma once
// adamw_crc: AdamW over one integrity chunk with the CRC32C of its p, m and v taken in the
// same pass: of the values it loads (to verify against their record) and of the values it
// stores (the new record). The separate way -- checksum the chunk, run AdamW, checksum it
// again -- reads the chunk three times; here each byte passes through the core once, the CRC
// work split between the crc32 instruction and carry-less folding (VPCLMULQDQ on 256-bit
// registers) as adamw_crc_avx2.cpp says. The check's instructions still add to AdamW's time
// (docs/benchmarks.md, "CRC on shm, the kernel's split"): little of them hides in its memory
// stalls.
//
// The results are bitwise those of the separate way: AdamW's bits are those of
// adamw_update_*grad (the operation order of adamw_variants.hpp), the CRCs those of
// io::crc32c over each array's n * 4 bytes (tests/executor/offload compare both).
//
// in and out may be the same arrays (a streamed subgroup updated in its pinned buffer) or
// different ones (a mapped subgroup: the new values go to a scratch chunk first, and reach the
// file only once `before` matched the record).

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/bf16.hpp"
#include "kernels/cpu/adamw.hpp"

namespace mlpo {

struct AdamWChunkCrcs {
  std::array<std::uint32_t, 3> before;  // CRC32C of p, m, v as loaded
  std::array<std::uint32_t, 3> after;   // CRC32C of p, m, v as stored
};

// Pointers to a chunk's arrays: what AdamW reads and where it writes.
struct AdamWChunk {
  const float* p_in;
  const float* m_in;
  const float* v_in;
  float* p;
  float* m;
  float* v;
};

// True where the fused pass runs: AVX2, VPCLMULQDQ, PCLMULQDQ and SSE4.2. Elsewhere callers
// checksum and update in separate passes (offload::checked_adamw does).
bool adamw_crc_available();

// AdamW (params, weight decay as given: one mask piece) on n elements of `chunk`, gradients
// g32 (fp32) or else g16 (bf16); p_out (may be null) gets the new bf16 weights. Needs
// adamw_crc_available().
AdamWChunkCrcs adamw_crc_update(const AdamWParams& params, const AdamWChunk& chunk, const float* g32,
                                const bf16* g16, bf16* p_out, std::size_t n);

}  // namespace mlpo
