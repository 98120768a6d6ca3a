// Fused softmax cross-entropy over the vocabulary: one block of 512 threads per token row
// (V = 32k .. 128k in the presets: 64-256 elements per thread). The row's max and sum of
// exp(x - max) come from block_max / block_sum (fixed trees); the loss (forward) or the
// gradient scale * (softmax - onehot) (backward) follows in the same kernel, so logits are
// read 2-3 times from L2/HBM and no probability matrix is stored. dlogits may alias logits:
// both statistics are complete (block-wide barrier inside block_sum) before any thread writes,
// and each thread rewrites only the elements it reads.
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kThreads = 512;

struct RowStats {
  float max, sum;
};

template <class T>
__device__ RowStats row_stats(const T* row, std::int64_t V, float* shared) {
  float max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) max = fmaxf(max, load(row[j]));
  max = block_max(max, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) sum += expf(load(row[j]) - max);
  sum = block_sum(sum, shared);
  return {max, sum};
}

template <class T>
__global__ void cross_entropy_forward_kernel(float* losses, const T* logits, const std::int32_t* targets,
                                             std::int64_t V) {
  __shared__ float shared[32];
  const std::int64_t n = blockIdx.x;
  const T* row = logits + n * V;
  const RowStats s = row_stats(row, V, shared);
  if (threadIdx.x == 0) losses[n] = s.max + logf(s.sum) - load(row[targets[n]]);
}

template <class T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* logits, const std::int32_t* targets,
                                              std::int64_t V, float scale) {
  __shared__ float shared[32];
  const std::int64_t n = blockIdx.x;
  const T* row = logits + n * V;
  T* drow = dlogits + n * V;
  const RowStats s = row_stats(row, V, shared);
  const std::int32_t target = targets[n];
  for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    const float p = expf(load(row[j]) - s.max) / s.sum;
    drow[j] = store<T>(scale * (p - (j == target ? 1.0f : 0.0f)));
  }
}

}  // namespace

void cross_entropy_forward(const OpContext& ctx, Tensor losses, Tensor logits, Tensor targets) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1);
  op_contract::cross_entropy_forward(losses, logits, targets);
  check_ids(ctx, targets, V, "target");
  if (N == 0) return;
  dispatch_storage(logits.dtype, "cross_entropy_forward", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_forward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        static_cast<float*>(losses.data), static_cast<const T*>(logits.data),
        static_cast<const std::int32_t*>(targets.data), V);
  });
  check_launch(ctx.stream, "cross_entropy_forward", losses, logits, targets);
}

void cross_entropy_backward(const OpContext& ctx, Tensor dlogits, Tensor logits, Tensor targets,
                            float scale) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1);
  op_contract::cross_entropy_backward(dlogits, logits, targets);
  check_ids(ctx, targets, V, "target");
  if (N == 0) return;
  dispatch_storage(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        static_cast<T*>(dlogits.data), static_cast<const T*>(logits.data),
        static_cast<const std::int32_t*>(targets.data), V, scale);
  });
  check_launch(ctx.stream, "cross_entropy_backward", dlogits, logits, targets);
}

}  // namespace mlpo::gpu
