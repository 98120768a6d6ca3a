// Rotary position embedding, Hugging Face LLaMA layout ("rotate_half"): in a head of dimension
// D, element i < D/2 pairs with i + D/2 and the pair turns by t * theta^(-2i/D) at position t.
// One thread per (token, pair index i) computes the angle, cosine and sine in double — the same
// expressions as the CPU twin, rounded to fp32 once, so they do not drift with t — and applies
// them to that pair in every head (the trigonometry is paid once per H heads). Memory-bound;
// out may alias x (each thread reads its pair before writing it).
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void rope_kernel(T* out, const T* x, std::int64_t BT, std::int64_t T_len, std::int64_t H,
                            std::int64_t D, float theta, int sign) {
  const std::int64_t half = D / 2;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < BT * half;
       idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t bt = idx / half, i = idx % half, t = bt % T_len;
    const double angle = static_cast<double>(t) * pow(static_cast<double>(theta),
                                                      -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const float c = static_cast<float>(cos(angle));
    const float s = static_cast<float>(sign * sin(angle));
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t base = (bt * H + h) * D;
      const float x1 = load(x[base + i]), x2 = load(x[base + i + half]);
      out[base + i] = store<T>(x1 * c - x2 * s);
      out[base + i + half] = store<T>(x2 * c + x1 * s);
    }
  }
}

void rotate(const OpContext& ctx, Tensor out, Tensor x, float theta, int sign, const char* op) {
  op_contract::rope(out, x, op);
  const std::int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  const std::int64_t pairs = B * T * (D / 2);
  if (pairs == 0) return;
  dispatch_storage(x.dtype, op, [&](auto tag) {
    using S = decltype(tag);
    rope_kernel<S><<<grid_for(pairs, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<S*>(out.data), static_cast<const S*>(x.data), B * T, T, H, D, theta, sign);
  });
  check_launch(ctx.stream, op, out, x);
}

}  // namespace

void rope_forward(const OpContext& ctx, Tensor out, Tensor x, float theta) {
  rotate(ctx, out, x, theta, +1, "rope_forward");
}

// The rotation is orthogonal: its transpose turns by the opposite angle.
void rope_backward(const OpContext& ctx, Tensor dx, Tensor dout, float theta) {
  rotate(ctx, dx, dout, theta, -1, "rope_backward");
}

}  // namespace mlpo::gpu
