#pragma once
// The one summation order every reduction of MLPO's communicators uses, so that a sum over
// ranks gives the same bits on every run, under every backend and every message schedule.
//
// The P contributions (one per rank, in rank order) are added in a fixed balanced binary
// tree over the contribution index: sum[lo, hi) = sum[lo, mid) + sum[mid, hi) with
// mid = lo + (hi - lo + 1) / 2, a single contribution being its own sum. Floats are added in
// fp32, doubles in fp64, bf16 contributions are widened to fp32, added in fp32 and rounded
// to bf16 once at the end. int64 sums are exact (order does not matter for them).
//
// Why a halving tree and not a left fold: for G contributions reduced as P blocks of G/P
// (each rank pre-summing its block with tree_sum, then the ranks' partial sums reduced with
// tree_sum), the result is bitwise the same as tree_sum over all G in one process whenever
// P is a power of two dividing G — a block of G/P contiguous leaves is a subtree of the
// halving tree. A training loop that sums its micro-batch gradients with tree_sum (in fp32)
// therefore gets the single-process gradient bits on 1, 2, 4, ... ranks. bf16 partial sums
// lose that property (each rank would round once): pre-sum in fp32 and reduce floats.
//
// Cost: one pass over P input blocks per output element; a few 4 KiB tiles of scratch per
// tree level (log2 P + 1 levels), nothing allocated per element.

#include <cstdint>
#include <span>

#include "core/bf16.hpp"

namespace mlpo::comm {

// out[i] = tree sum over p of parts[p][i], for i < out.size(). Every parts[p] points at
// out.size() readable elements; `out` may be one of the parts (element i is written only
// after every part's element i has been read), but must not overlap one at another offset.
void tree_sum(std::span<const float* const> parts, std::span<float> out);
void tree_sum(std::span<const double* const> parts, std::span<double> out);
void tree_sum(std::span<const bf16* const> parts, std::span<bf16> out);
void tree_sum(std::span<const std::int64_t* const> parts, std::span<std::int64_t> out);

}  // namespace mlpo::comm
