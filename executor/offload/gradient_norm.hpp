#pragma once
// Global gradient norm for clipping, reduced so that the result is bitwise the same for any
// placement, update order, thread count or number of ranks: the global parameter index is
// cut into fixed chunks of kNormChunk elements; each chunk's sum of squares is accumulated
// in double, sequentially, by one thread; the chunk sums are then added in chunk order.
// Shards are chunk-aligned (RankShard), so a rank computes whole chunks of its own and the
// ranks only exchange the per-chunk sums.

#include <cstdint>
#include <span>
#include <vector>

#include "core/bf16.hpp"
#include "core/thread_pool.hpp"

namespace mlpo::offload {

// Sum of squares of each kNormChunk-element chunk of `grads` (the last may be partial).
std::vector<double> chunk_square_sums(std::span<const bf16> grads, ThreadPool& pool);

// sqrt of the in-order sum of every chunk of the global index.
double global_norm(std::span<const double> all_chunk_sums);

// min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0 (clipping off).
float clip_scale(double norm, double max_norm);

}  // namespace mlpo::offload
