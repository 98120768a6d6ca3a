#pragma once
// The rank-order tree sum of rank_order_sum.hpp as a CUDA kernel, for NcclCommunicator:
// out[i] = tree sum over p of parts[p][i] (device pointers; `parts` itself is a device
// array of `count_parts` pointers). Same tree, same fp32 adds, same single bf16 rounding as
// the CPU version, so both give the same bits. Enqueued on `stream`; returns its launch error.

#include <cuda_runtime.h>

#include <cstdint>

namespace mlpo::comm {

// The element type of a tree sum (the summable ElementTypes; this header stays C++17 for nvcc).
enum class TreeSumType { f32, f64, bf16, i64 };

cudaError_t launch_tree_sum(TreeSumType type, const void* const* parts, int count_parts, void* out,
                            std::int64_t count, cudaStream_t stream);

}  // namespace mlpo::comm
