// Token embedding lookup and its gradient.
// Forward: one block per token row copies C channels (coalesced).
// Backward: several tokens may hit the same table row, so rows cannot be processed in
// parallel without atomics (whose order would make fp32 sums non-deterministic). The tokens
// are sorted by id instead — a stable radix sort of (id, position) pairs (CUB), so each
// distinct id becomes one run of its positions in ascending order — and a thread per (run,
// column) adds the run's rows of dout into dtable[id, c] in that order: exactly the CPU's
// sequence of fp32 additions, so the result is bitwise the CPU backend's. Parallel over
// distinct ids x columns (the previous kernel walked all N tokens in each of C threads: ~8 ms
// for 8k tokens). The sort's buffers live in the `ids` scratch slot (embedding_scratch_bytes).
// The id check is a separate kernel that records the first bad position with atomicMin (the
// minimum does not depend on the order of the atomics) and one int read back to the host —
// skipped when the backend saw the ids uploaded from the host and checked them there
// (IdRanges, cuda_backend.hpp).
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <optional>

#include "kernels/cuda/internal/cuda_common.cuh"
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

__global__ void positions_kernel(std::int32_t* positions, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    positions[i] = static_cast<std::int32_t>(i);
}

// Block (i, column block): when sorted entry i starts a run of one id, its threads add the
// run's dout rows into that id's table row, in ascending position order.
template <class T>
__global__ void embedding_backward_kernel(float* dtable, const std::int32_t* sorted_ids,
                                          const std::int32_t* positions, const T* dout, std::int64_t N,
                                          std::int64_t C) {
  const std::int64_t i = blockIdx.x;
  const std::int32_t id = sorted_ids[i];
  if (i > 0 && sorted_ids[i - 1] == id) return;  // not the start of a run
  const std::int64_t c = blockIdx.y * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  float* row = dtable + static_cast<std::int64_t>(id) * C;
  float acc = row[c];
  for (std::int64_t j = i; j < N && sorted_ids[j] == id; ++j) acc += load(dout[positions[j] * C + c]);
  row[c] = acc;
}

// Bits the radix sort needs for ids in [0, vocab).
int id_bits(std::int64_t vocab) {
  int bits = 1;
  while (bits < 31 && (std::int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

// CUB's temporary storage for a double-buffered sort of n pairs, as asked of CUB.
std::size_t sort_temp_bytes(std::int64_t n, int bits) {
  std::size_t bytes = 0;
  cub::DoubleBuffer<std::int32_t> keys(nullptr, nullptr), values(nullptr, nullptr);
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, static_cast<int>(n), 0, bits),
        "the embedding backward's sort (temporary storage size)");
  return bytes;
}

}  // namespace

void check_ids(const OpContext& ctx, Tensor ids, std::int64_t vocab, const char* what) {
  expect_type(ids, DType::i32, what, "ids");
  const std::int64_t n = ids.numel();
  MLPO_CHECK(n < INT_MAX, std::string(what) + ": more than 2^31 ids in one call");
  if (n == 0) return;
  if (ctx.ids != nullptr) {
    const std::optional<IdRange> known = ctx.ids->find(ids.data, n);
    if (known && known->min >= 0 && known->max < vocab) return;
  }
  int* flag = static_cast<int*>(ctx.scratch.get(DeviceScratch::flag, sizeof(int), ctx.stream));
  init_flag_kernel<<<1, 1, 0, ctx.stream>>>(flag);
  first_bad_id_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
      static_cast<const std::int32_t*>(ids.data), n, vocab, flag);
  check_launch(ctx.stream, "id range check", ids);
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
  check_launch(ctx.stream, "embedding_forward", out, tokens, table);
}

std::size_t embedding_scratch_bytes(std::int64_t tokens) {
  // Four id/position buffers (each rounded to 256 bytes) and CUB's storage: the histograms and
  // look-back of its passes, a few bytes per token plus a fixed part.
  return static_cast<std::size_t>(tokens) * (4 * sizeof(std::int32_t) + 8) + (std::size_t{2} << 20);
}

void embedding_backward(const OpContext& ctx, Tensor dtable, Tensor tokens, Tensor dout) {
  const std::int64_t N = tokens.numel(), vocab = dtable.dim(0), C = dtable.dim(1);
  op_contract::embedding_backward(dtable, tokens, dout);
  check_ids(ctx, tokens, vocab, "token");
  if (N == 0 || C == 0) return;
  const int bits = id_bits(vocab);
  const std::size_t temp = sort_temp_bytes(N, bits);
  const std::size_t ids_bytes = (static_cast<std::size_t>(N) * sizeof(std::int32_t) + 255) / 256 * 256;
  char* base = static_cast<char*>(ctx.scratch.get(DeviceScratch::ids, 4 * ids_bytes + temp, ctx.stream));
  auto* keys = reinterpret_cast<std::int32_t*>(base);
  auto* keys_alt = reinterpret_cast<std::int32_t*>(base + ids_bytes);
  auto* positions = reinterpret_cast<std::int32_t*>(base + 2 * ids_bytes);
  auto* positions_alt = reinterpret_cast<std::int32_t*>(base + 3 * ids_bytes);
  void* temp_storage = base + 4 * ids_bytes;
  // The sort must not reorder the caller's ids: they are copied into the key buffer first.
  check(cudaMemcpyAsync(keys, tokens.data, static_cast<std::size_t>(N) * sizeof(std::int32_t),
                        cudaMemcpyDeviceToDevice, ctx.stream),
        "embedding_backward id copy");
  positions_kernel<<<grid_for(N, kThreads), kThreads, 0, ctx.stream>>>(positions, N);
  cub::DoubleBuffer<std::int32_t> sorted_keys(keys, keys_alt), sorted_positions(positions, positions_alt);
  std::size_t temp_bytes = temp;
  check(cub::DeviceRadixSort::SortPairs(temp_storage, temp_bytes, sorted_keys, sorted_positions,
                                        static_cast<int>(N), 0, bits, ctx.stream),
        "the embedding backward's sort");
  dispatch_storage(dout.dtype, "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(N), static_cast<unsigned>((C + kThreads - 1) / kThreads));
    embedding_backward_kernel<T><<<grid, kThreads, 0, ctx.stream>>>(
        static_cast<float*>(dtable.data), sorted_keys.Current(), sorted_positions.Current(),
        static_cast<const T*>(dout.data), N, C);
  });
  check_launch(ctx.stream, "embedding_backward", dtable, tokens, dout);
}

}  // namespace mlpo::gpu
