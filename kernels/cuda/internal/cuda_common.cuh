#pragma once
// Shared device code of the CUDA op files (internal to kernels/cuda): loads and stores that
// convert storage types to fp32 and back with the same rounding as core/bf16.hpp (so a cast is
// bitwise the CPU's), fixed-order warp and block reductions, launch checks and the switch from
// a runtime DType to a template instantiation. The argument checks are the shared contracts of
// kernels/op_contracts.hpp.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/op_contracts.hpp"  // the argument checks both backends share
#include "kernels/tensor.hpp"

namespace mlpo::gpu {

using op_contract::accumulator_dtype;
using op_contract::expect_shape;
using op_contract::expect_type;

__device__ __forceinline__ float load(bf16 x) {
  return __uint_as_float(static_cast<std::uint32_t>(x.bits) << 16);
}
__device__ __forceinline__ float load(float x) { return x; }

// Round-to-nearest-even, NaN kept quiet: the rule of float_to_bf16 in core/bf16.hpp.
template <class T>
__device__ __forceinline__ T store(float x);
template <>
__device__ __forceinline__ float store<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 store<bf16>(float x) {
  std::uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

// Butterfly reductions: after the loop every lane holds the same value (each step adds two
// values whose sum is the same in either order), computed by a fixed tree.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

struct WarpSum {
  __device__ __forceinline__ float operator()(float v) const { return warp_sum(v); }
};
struct WarpMax {
  __device__ __forceinline__ float operator()(float v) const { return warp_max(v); }
};

// Block-wide reduction for blockDim.x a multiple of 32 (<= 1024); every thread gets the result.
// `shared` holds 32 floats; the leading __syncthreads lets a block call this repeatedly.
// `identity` stands in for the warps past the last one.
template <class WarpReduce>
__device__ __forceinline__ float block_reduce(float v, float* shared, float identity) {
  const WarpReduce reduce{};
  v = reduce(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  return reduce(lane < warps ? shared[lane] : identity);
}

// Block-wide sum/max, as block_reduce.
__device__ __forceinline__ float block_sum(float v, float* shared) {
  return block_reduce<WarpSum>(v, shared, 0.0f);
}
__device__ __forceinline__ float block_max(float v, float* shared) {
  return block_reduce<WarpMax>(v, shared, -INFINITY);
}

// Blocks for a grid-stride loop over n elements with `threads` per block.
inline unsigned grid_for(std::int64_t n, int threads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

// "bf16[2,77,4,64], f32[2,4,77]": the tensors of an op, for its error messages.
template <class... Tensors>
std::string describe_tensors(const Tensors&... tensors) {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + tensors.describe()), ...);
  return s;
}

// Call after an op's launches on `stream`: a bad launch throws GpuError naming the op and its
// tensors' shapes; under MLPO_CUDA_SYNC_CHECK=1 the stream is synchronised too, so a fault
// inside the op's kernels is reported here, by name. The description is built only on error.
template <class... Tensors>
void check_launch(cudaStream_t stream, const char* op, const Tensors&... tensors) {
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess)
    check(launch, std::string("the launch of ") + op + " (" + describe_tensors(tensors...) + ")");
  if (sync_check_enabled())
    check(cudaStreamSynchronize(stream), std::string(op) + " (" + describe_tensors(tensors...) +
                                             "), synchronised after its launches by MLPO_CUDA_SYNC_CHECK=1");
}

// Calls fn(T{}) for a bf16 or f32 storage type.
template <class Fn>
void dispatch_storage(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::bf16:
      fn(bf16{});
      return;
    case DType::f32:
      fn(float{});
      return;
    default:
      break;
  }
  MLPO_CHECK(false, std::string(op) + ": the CUDA backend stores bf16 or f32, got " + dtype_name(t) +
                        " (f64 is the CPU backend's test-only type)");
}

}  // namespace mlpo::gpu
