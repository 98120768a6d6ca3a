// RMSNorm: y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), per row of C channels.
// Forward and dx: one block of 256 threads per row (C = 512 .. 8192 in the presets: 2-32
// elements per thread), the row's sum by block_sum's fixed tree.
// dweight[c] += sum_n dy[n,c] x[n,c] rstd[n] is a reduction over rows. Instead of atomics, it
// runs in two kernels with a fixed order: (1) the rows are cut into at most 256 chunks and one
// thread per (chunk, column) sums its chunk in row order into a partials[chunk, C] scratch;
// (2) one thread per column adds the chunk partials in chunk order and accumulates into
// dweight. The chunking depends only on N, so results are reproducible.
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kRowThreads = 256;
constexpr int kColumnThreads = 128;

template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* x, const T* w, std::int64_t C,
                                       float eps) {
  __shared__ float shared[32];
  const std::int64_t n = blockIdx.x;
  const T* row = x + n * C;
  float sumsq = 0.0f;
  for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) sumsq += load(row[c]) * load(row[c]);
  sumsq = block_sum(sumsq, shared);
  const float r = 1.0f / sqrtf(sumsq / static_cast<float>(C) + eps);
  if (threadIdx.x == 0) rstd[n] = r;
  for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[n * C + c] = store<T>(load(row[c]) * r * load(w[c]));
}

template <class T>
__global__ void rmsnorm_backward_dx_kernel(T* dx, const T* dout, const T* x, const T* w, const float* rstd,
                                           std::int64_t C) {
  __shared__ float shared[32];
  const std::int64_t n = blockIdx.x;
  const T* xr = x + n * C;
  const T* dyr = dout + n * C;
  const float r = rstd[n];
  float dot = 0.0f;
  for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x)
    dot += load(dyr[c]) * load(w[c]) * load(xr[c]) * r;
  const float mean = block_sum(dot, shared) / static_cast<float>(C);
  for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float xhat = load(xr[c]) * r;
    dx[n * C + c] = store<T>(r * (load(dyr[c]) * load(w[c]) - xhat * mean));
  }
}

template <class T>
__global__ void rmsnorm_dweight_partials_kernel(float* partials, const T* dout, const T* x, const float* rstd,
                                                std::int64_t N, std::int64_t C, std::int64_t rows_per_chunk) {
  const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const std::int64_t chunk = blockIdx.y, begin = chunk * rows_per_chunk;
  const std::int64_t end = begin + rows_per_chunk < N ? begin + rows_per_chunk : N;
  float sum = 0.0f;
  for (std::int64_t n = begin; n < end; ++n) sum += load(dout[n * C + c]) * load(x[n * C + c]) * rstd[n];
  partials[chunk * C + c] = sum;
}

__global__ void sum_partials_kernel(float* dweight, const float* partials, std::int64_t chunks,
                                    std::int64_t C) {
  const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  float sum = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) sum += partials[k * C + c];
  dweight[c] += sum;
}

}  // namespace

void rmsnorm_forward(const OpContext& ctx, Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  op_contract::rmsnorm_forward(out, rstd, x, weight);
  if (N == 0) return;
  dispatch_storage(x.dtype, "rmsnorm_forward", [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_forward_kernel<T><<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream>>>(
        static_cast<T*>(out.data), static_cast<float*>(rstd.data), static_cast<const T*>(x.data),
        static_cast<const T*>(weight.data), C, eps);
  });
  check_launch(ctx.stream, "rmsnorm_forward", out, rstd, x, weight);
}

void rmsnorm_backward(const OpContext& ctx, Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                      Tensor rstd) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  op_contract::rmsnorm_backward(dx, dweight, dout, x, weight, rstd);
  if (N == 0) return;
  const std::int64_t chunks = std::min(kMaxReductionChunks, (N + 63) / 64);
  const std::int64_t rows_per_chunk = (N + chunks - 1) / chunks;
  float* partials = static_cast<float*>(ctx.scratch.get(
      DeviceScratch::partials, static_cast<std::size_t>(chunks * C) * sizeof(float), ctx.stream));
  const unsigned column_blocks = static_cast<unsigned>((C + kColumnThreads - 1) / kColumnThreads);
  dispatch_storage(x.dtype, "rmsnorm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T*>(dout.data), *xp = static_cast<const T*>(x.data);
    const float* rp = static_cast<const float*>(rstd.data);
    rmsnorm_backward_dx_kernel<T><<<static_cast<unsigned>(N), kRowThreads, 0, ctx.stream>>>(
        static_cast<T*>(dx.data), dy, xp, static_cast<const T*>(weight.data), rp, C);
    rmsnorm_dweight_partials_kernel<T>
        <<<dim3(column_blocks, static_cast<unsigned>(chunks)), kColumnThreads, 0, ctx.stream>>>(
            partials, dy, xp, rp, N, C, rows_per_chunk);
  });
  sum_partials_kernel<<<column_blocks, kColumnThreads, 0, ctx.stream>>>(static_cast<float*>(dweight.data),
                                                                        partials, chunks, C);
  check_launch(ctx.stream, "rmsnorm_backward", dx, dweight, dout, x, weight, rstd);
}

}  // namespace mlpo::gpu
