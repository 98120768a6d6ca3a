#include "executor/comm/internal/nccl_tree_sum.hpp"

namespace mlpo::comm {

namespace {

// bf16 <-> fp32 with the rules of core/bf16.hpp (round to nearest even, NaN stays quiet NaN).
__device__ float widen(std::uint16_t bits) { return __uint_as_float(static_cast<unsigned>(bits) << 16); }
__device__ float widen(float x) { return x; }
__device__ double widen(double x) { return x; }
__device__ long long widen(long long x) { return x; }

__device__ std::uint16_t round_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// sum[lo, hi) = sum[lo, mid) + sum[mid, hi), mid = lo + (hi - lo + 1) / 2: the CPU tree.
template <class In, class Acc>
__device__ Acc tree(const In* const* parts, int lo, int hi, std::int64_t i) {
  if (hi - lo == 1) return widen(parts[lo][i]);
  const int mid = lo + (hi - lo + 1) / 2;
  const Acc left = tree<In, Acc>(parts, lo, mid, i);
  const Acc right = tree<In, Acc>(parts, mid, hi, i);
  return left + right;
}

template <class In, class Acc>
__global__ void tree_sum_kernel(const In* const* parts, int count_parts, In* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const Acc sum = tree<In, Acc>(parts, 0, count_parts, i);
    if constexpr (sizeof(In) == 2)
      out[i] = round_to_bf16(sum);
    else
      out[i] = sum;
  }
}

template <class In, class Acc>
cudaError_t launch(const void* const* parts, int count_parts, void* out, std::int64_t count,
                   cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  const int grid = static_cast<int>(blocks < 65535 ? blocks : 65535);
  tree_sum_kernel<In, Acc><<<grid, kThreads, 0, stream>>>(reinterpret_cast<const In* const*>(parts),
                                                          count_parts, static_cast<In*>(out), count);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_tree_sum(TreeSumType type, const void* const* parts, int count_parts, void* out,
                            std::int64_t count, cudaStream_t stream) {
  switch (type) {
    case TreeSumType::f32:
      return launch<float, float>(parts, count_parts, out, count, stream);
    case TreeSumType::f64:
      return launch<double, double>(parts, count_parts, out, count, stream);
    case TreeSumType::bf16:
      return launch<std::uint16_t, float>(parts, count_parts, out, count, stream);
    case TreeSumType::i64:
      return launch<long long, long long>(parts, count_parts, out, count, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlpo::comm
