#pragma once
// checked_adamw: one subgroup's AdamW with its integrity check fused in, the way the update
// pipeline runs every subgroup of a file tier with CRC on: per 16 Ki-element chunk while it is
// in cache, verify the chunk's CRC32C records of p, m and v, run AdamW on the weight-decay
// mask's pieces of it, record the new CRCs. Chunks are split over the pool's threads in
// static ranges (core/adam_split.hpp). AdamW is element-wise, so the bits are those of one
// call over the whole subgroup. The profile times this very function
// (host.adam_checked_elements_per_s),
// so the models' Adam rate with integrity on is the pipeline's own.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/bf16.hpp"
#include "core/thread_pool.hpp"
#include "executor/offload/internal/in_place_integrity.hpp"
#include "executor/offload/weight_decay_mask.hpp"
#include "kernels/cpu/adamw.hpp"

namespace mlpo::offload {

// Subgroup `subgroup` of `integrity`: n elements of p, m, v, shard-local elements
// [begin, begin + n) of `mask`; gradients g32 (fp32) or else g16 (bf16); out: the new bf16
// weights (may be null). `mapped`: p, m, v are a host tier's mapped file, whose bytes must not
// change before their check passed; else a pinned buffer that is written back only after the
// whole subgroup passed. A chunk that differs from its record throws mlpo::Error starting
// with `where`. Marks the subgroup recorded.
//
// Where the CPU has AVX2 and VPCLMULQDQ (kernels/cpu/adamw_crc.hpp), a chunk inside one
// weight-decay piece is checked, updated and recorded in one pass over its bytes (a mapped
// chunk's new values staged in a per-thread scratch chunk, copied in after the check); other
// chunks and CPUs take three passes over the chunk in cache (verify, AdamW, record). The bits
// and the records are the same either way.
void checked_adamw(ThreadPool& pool, InPlaceIntegrity& integrity, std::int64_t subgroup,
                   const WeightDecayMask& mask, std::int64_t begin, const AdamWParams& adam, float* p,
                   float* m, float* v, const float* g32, const bf16* g16, bf16* out, std::size_t n,
                   bool mapped, const std::string& where);

}  // namespace mlpo::offload
