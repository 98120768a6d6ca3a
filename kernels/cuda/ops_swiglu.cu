// SwiGLU gating of the LLaMA MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g).
// Backward: dup = dout * silu(g); dgate = dout * up * sigmoid(g) * (1 + g * (1 - sigmoid(g))).
// Element-wise, one thread per element in a grid-stride loop (memory-bound); expf, not the
// fast __expf, so the results stay within an ulp or two of the CPU's std::exp.
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* gate, const T* up, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = load(gate[i]);
    out[i] = store<T>(g / (1.0f + expf(-g)) * load(up[i]));
  }
}

template <class T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up,
                                       std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = load(gate[i]), u = load(up[i]), dy = load(dout[i]);
    const float sig = 1.0f / (1.0f + expf(-g));
    dup[i] = store<T>(dy * g * sig);
    dgate[i] = store<T>(dy * u * sig * (1.0f + g * (1.0f - sig)));
  }
}

}  // namespace

void swiglu_forward(const OpContext& ctx, Tensor out, Tensor gate, Tensor up) {
  op_contract::swiglu_forward(out, gate, up);
  const std::int64_t n = gate.numel();
  if (n == 0) return;
  dispatch_storage(gate.dtype, "swiglu_forward", [&](auto tag) {
    using T = decltype(tag);
    swiglu_forward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<T*>(out.data), static_cast<const T*>(gate.data), static_cast<const T*>(up.data), n);
  });
  check_launch(ctx.stream, "swiglu_forward", out, gate, up);
}

void swiglu_backward(const OpContext& ctx, Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) {
  const std::int64_t n = gate.numel();
  op_contract::swiglu_backward(dgate, dup, dout, gate, up);
  if (n == 0) return;
  dispatch_storage(gate.dtype, "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    swiglu_backward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<T*>(dgate.data), static_cast<T*>(dup.data), static_cast<const T*>(dout.data),
        static_cast<const T*>(gate.data), static_cast<const T*>(up.data), n);
  });
  check_launch(ctx.stream, "swiglu_backward", dgate, dup, dout, gate, up);
}

}  // namespace mlpo::gpu
