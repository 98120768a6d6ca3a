// Linear layers without bias, out = x @ w^T with w stored [out_features, in_features], as GEMMs
// through cuBLASLt: bf16 (or f32) operands, fp32 accumulation (CUBLAS_COMPUTE_32F, never TF32),
// one rounding to the output type. Weight gradients are fp32 and accumulated in place
// (beta = 1) from bf16 operands (cuBLASLt's BF16-in / FP32-out case).
//
// Row-major vs column-major: cuBLAS is column-major, and a row-major [r, c] matrix is the
// column-major [c, r] matrix (its transpose) with leading dimension c. So each row-major product
// is issued as its transpose, operands swapped:
//   forward   out[N,O] = x[N,I] w[O,I]^T    ->  out^T[O,N] = op_T(w: col [I,O]) x^T(col [I,N])
//   dx        dx[N,I]  = dout[N,O] w[O,I]   ->  dx^T[I,N]  = w^T(col [I,O]) dout^T(col [O,N])
//   dw        dw[O,I] += dout^T[O,N] x[N,I] ->  dw^T[I,O] += x^T(col [I,N]) op_T(dout: col [O,N])
// Tuned for: nothing by hand — cuBLASLt's heuristic picks the kernel per shape (once, cached in
// Gemm, gemm.hpp), told each pointer's real alignment since parameter slices of the flat weight
// buffer are not all 256-byte aligned.
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

void linear_forward(const OpContext& ctx, Gemm& gemm, Tensor out, Tensor x, Tensor w) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_forward(out, x, w);
  const GemmType t = gemm_type(x.dtype, "linear_forward");
  if (I == 0) return fill(ctx, out, 0.0);
  gemm.run(ctx.stream, true, false, O, N, I, t, w.data, I, x.data, I, 0.0f, t, out.data, O);
}

void linear_backward(const OpContext& ctx, Gemm& gemm, Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w,
                     bool accumulate_dx) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_backward(dx, dw, dout, x, w);
  const GemmType t = gemm_type(x.dtype, "linear_backward");
  if (O == 0) {
    if (!accumulate_dx) fill(ctx, dx, 0.0);
    return;
  }
  gemm.run(ctx.stream, false, false, I, N, O, t, w.data, I, dout.data, O, accumulate_dx ? 1.0f : 0.0f, t,
           dx.data, I);
  if (N == 0) return;
  gemm.run(ctx.stream, false, true, I, O, N, t, x.data, I, dout.data, O, 1.0f, GemmType::f32, dw.data, I);
}

}  // namespace mlpo::gpu
