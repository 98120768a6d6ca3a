// Token embedding lookup and its gradient.
// Forward: one block per token row copies C channels (coalesced).
// Backward: several tokens may hit the same table row, so rows cannot be processed in
// parallel without atomics (whose order would make fp32 sums non-deterministic). As on the
// CPU, channels are split instead: thread c owns column c of the table gradient and walks all
// N tokens in order, adding dout[n, c] into dtable[tokens[n], c]. Consecutive threads touch
// consecutive addresses (coalesced), and the additions happen in exactly the CPU's order, so
// the result is bitwise the CPU backend's. Cost: C threads, N steps each — a few ms for
// N = 16k tokens, once per step; not worth a sort-based scheme.
// The id check is a separate kernel that records the first bad position with atomicMin (the
// minimum does not depend on the order of the atomics) and one int read back to the host.
#include <climits>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kThreads = 256;

__global__ void init_flag_kernel(int* flag) { *flag = INT_MAX; }

__global__ void first_bad_id_kernel(const std::int32_t* ids, std::int64_t n, std::int64_t vocab,
                                    int* first_bad) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    if (ids[i] < 0 || ids[i] >= vocab) atomicMin(first_bad, static_cast<int>(i));
}

template <class T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* table, std::int64_t C) {
  const std::int64_t n = blockIdx.x;
  const T* row = table + static_cast<std::int64_t>(tokens[n]) * C;
  for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) out[n * C + c] = row[c];
}

template <class T>
__global__ void embedding_backward_kernel(float* dtable, const std::int32_t* tokens, const T* dout,
                                          std::int64_t N, std::int64_t C) {
  const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  for (std::int64_t n = 0; n < N; ++n)
    dtable[static_cast<std::int64_t>(tokens[n]) * C + c] += load(dout[n * C + c]);
}

}  // namespace

void check_ids(const OpContext& ctx, Tensor ids, std::int64_t vocab, const char* what) {
  expect_type(ids, DType::i32, what, "ids");
  const std::int64_t n = ids.numel();
  MLPO_CHECK(n < INT_MAX, std::string(what) + ": more than 2^31 ids in one call");
  if (n == 0) return;
  int* flag = static_cast<int*>(ctx.scratch.get(DeviceScratch::flag, sizeof(int), ctx.stream));
  init_flag_kernel<<<1, 1, 0, ctx.stream>>>(flag);
  first_bad_id_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
      static_cast<const std::int32_t*>(ids.data), n, vocab, flag);
  check_launch("id range check");
  int first_bad = INT_MAX;
  check(cudaMemcpyAsync(&first_bad, flag, sizeof first_bad, cudaMemcpyDeviceToHost, ctx.stream),
        "id check read-back");
  check(cudaStreamSynchronize(ctx.stream), "id check read-back");
  if (first_bad == INT_MAX) return;
  std::int32_t id = 0;
  check(cudaMemcpyAsync(&id, static_cast<const std::int32_t*>(ids.data) + first_bad, sizeof id,
                        cudaMemcpyDeviceToHost, ctx.stream),
        "id check read-back");
  check(cudaStreamSynchronize(ctx.stream), "id check read-back");
  throw op_contract::out_of_vocabulary(what, id, first_bad, vocab);
}

void embedding_forward(const OpContext& ctx, Tensor out, Tensor tokens, Tensor table) {
  const std::int64_t N = tokens.numel(), vocab = table.dim(0), C = table.dim(1);
  op_contract::embedding_forward(out, tokens, table);
  check_ids(ctx, tokens, vocab, "token");
  if (N == 0) return;
  dispatch_storage(table.dtype, "embedding_forward", [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        static_cast<T*>(out.data), static_cast<const std::int32_t*>(tokens.data),
        static_cast<const T*>(table.data), C);
  });
  check_launch("embedding_forward");
}

void embedding_backward(const OpContext& ctx, Tensor dtable, Tensor tokens, Tensor dout) {
  const std::int64_t N = tokens.numel(), vocab = dtable.dim(0), C = dtable.dim(1);
  op_contract::embedding_backward(dtable, tokens, dout);
  check_ids(ctx, tokens, vocab, "token");
  if (N == 0) return;
  dispatch_storage(dout.dtype, "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    embedding_backward_kernel<T><<<static_cast<unsigned>((C + 127) / 128), 128, 0, ctx.stream>>>(
        static_cast<float*>(dtable.data), static_cast<const std::int32_t*>(tokens.data),
        static_cast<const T*>(dout.data), N, C);
  });
  check_launch("embedding_backward");
}

}  // namespace mlpo::gpu
