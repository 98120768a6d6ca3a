// Element-wise ops: type conversion, fill, addition. One thread per element in a grid-stride
// loop; memory-bound, so the only tuning is enough blocks (up to 65536 of 256 threads) to keep
// every SM's load/store units busy. bf16 rounding is bit-for-bit that of core/bf16.hpp.
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kThreads = 256;

template <class D, class S>
__global__ void cast_kernel(D* dst, const S* src, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = store<D>(load(src[i]));
}

template <class T>
__global__ void fill_kernel(T* dst, T value, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

template <class T>
__global__ void add_kernel(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = store<T>(load(a[i]) + load(b[i]));
}

}  // namespace

void cast(const OpContext& ctx, Tensor dst, Tensor src) {
  op_contract::cast(dst, src);
  const std::int64_t n = src.numel();
  if (n == 0) return;
  dispatch_storage(dst.dtype, "cast", [&](auto dtag) {
    using D = decltype(dtag);
    dispatch_storage(src.dtype, "cast", [&](auto stag) {
      using S = decltype(stag);
      cast_kernel<D, S><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
          static_cast<D*>(dst.data), static_cast<const S*>(src.data), n);
    });
  });
  check_launch(ctx.stream, "cast", dst, src);
}

void fill(const OpContext& ctx, Tensor dst, double value) {
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  const unsigned blocks = grid_for(n, kThreads);
  if (dst.dtype == DType::i32) {
    fill_kernel<std::int32_t><<<blocks, kThreads, 0, ctx.stream>>>(static_cast<std::int32_t*>(dst.data),
                                                                   static_cast<std::int32_t>(value), n);
  } else if (dst.dtype == DType::bf16) {
    fill_kernel<bf16><<<blocks, kThreads, 0, ctx.stream>>>(static_cast<bf16*>(dst.data),
                                                           float_to_bf16(static_cast<float>(value)), n);
  } else {
    dispatch_storage(dst.dtype, "fill", [&](auto) {});  // rejects f64 with the message
    fill_kernel<float>
        <<<blocks, kThreads, 0, ctx.stream>>>(static_cast<float*>(dst.data), static_cast<float>(value), n);
  }
  check_launch(ctx.stream, "fill", dst);
}

void add(const OpContext& ctx, Tensor out, Tensor a, Tensor b) {
  op_contract::add(out, a, b);
  const std::int64_t n = out.numel();
  if (n == 0) return;
  dispatch_storage(out.dtype, "add", [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<T*>(out.data), static_cast<const T*>(a.data), static_cast<const T*>(b.data), n);
  });
  check_launch(ctx.stream, "add", out, a, b);
}

}  // namespace mlpo::gpu
