// Linear layers without bias: out = x @ w^T with w stored [out_features, in_features] as
// Hugging Face stores it. Two paths with one contract:
//  * reference: three nested loops, one output element per inner loop, threaded over rows.
//  * blas: OpenBLAS sgemm/dgemm. bf16 operands are widened to fp32 staging buffers first
//    (exact), the product is computed in fp32 and rounded to bf16 once. Weight gradients are
//    fp32 already and are accumulated in place (beta = 1).
// OpenBLAS runs with the thread count the CpuBackend fixed at construction. Its work split is a
// static function of the shapes and that count, so for a fixed count sgemm is bitwise
// reproducible run to run (tested); results do not depend on the ThreadPool's size. A different
// OpenBLAS thread count does change results in the last bits (checked with 0.3.21: 1 vs 2
// threads differ), which is why that count is pinned.
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/ops_common.hpp"

namespace mlpo::cpu {

namespace {

constexpr std::size_t kGrain = 8192;

void widen(ThreadPool& pool, const bf16* src, float* dst, std::int64_t n) {
  pool.parallel_for(static_cast<std::size_t>(n), kGrain, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) dst[i] = bf16_to_float(src[i]);
  });
}

void narrow(ThreadPool& pool, const float* src, bf16* dst, std::int64_t n) {
  pool.parallel_for(static_cast<std::size_t>(n), kGrain, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) dst[i] = float_to_bf16(src[i]);
  });
}

// C[M,N] = op(A) @ op(B) + beta * C, row-major, through cblas_sgemm or cblas_dgemm.
template <class T, class Blas>
void gemm_with(Blas blas, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
               const T* A, const T* B, T beta, T* C) {
  blas(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
       static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), T(1), A,
       static_cast<blasint>(trans_a ? M : K), B, static_cast<blasint>(trans_b ? K : N), beta, C,
       static_cast<blasint>(N));
}

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
          const float* B, float beta, float* C) {
  gemm_with(cblas_sgemm, trans_a, trans_b, M, N, K, A, B, beta, C);
}

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, const double* A,
          const double* B, double beta, double* C) {
  gemm_with(cblas_dgemm, trans_a, trans_b, M, N, K, A, B, beta, C);
}

// ---- reference loops ------------------------------------------------------------------

template <class T>
void forward_reference(ThreadPool& pool, T* out, const T* x, const T* w, std::int64_t N, std::int64_t I,
                       std::int64_t O) {
  pool.parallel_for(static_cast<std::size_t>(N), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t n = b; n < e; ++n)
      for (std::int64_t o = 0; o < O; ++o) {
        Acc<T> sum = 0;
        for (std::int64_t i = 0; i < I; ++i) sum += load(x[n * I + i]) * load(w[o * I + i]);
        out[n * O + o] = store<T>(sum);
      }
  });
}

template <class T>
void backward_reference(ThreadPool& pool, T* dx, Acc<T>* dw, const T* dout, const T* x, const T* w,
                        std::int64_t N, std::int64_t I, std::int64_t O, bool accumulate_dx) {
  pool.parallel_for(static_cast<std::size_t>(N), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t n = b; n < e; ++n)
      for (std::int64_t i = 0; i < I; ++i) {
        Acc<T> sum = 0;
        for (std::int64_t o = 0; o < O; ++o) sum += load(dout[n * O + o]) * load(w[o * I + i]);
        dx[n * I + i] = store<T>(accumulate_dx ? load(dx[n * I + i]) + sum : sum);
      }
  });
  pool.parallel_for(static_cast<std::size_t>(O), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t o = b; o < e; ++o)
      for (std::int64_t i = 0; i < I; ++i) {
        Acc<T> sum = 0;
        for (std::int64_t n = 0; n < N; ++n) sum += load(dout[n * O + o]) * load(x[n * I + i]);
        dw[o * I + i] += sum;
      }
  });
}

}  // namespace

void linear_forward(const LinearContext& ctx, Tensor out, Tensor x, Tensor w) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_forward(out, x, w);
  dispatch_float(x.dtype, "linear_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (ctx.path == GemmPath::reference)
      return forward_reference(ctx.pool, out.as<T>(), x.as<T>(), w.as<T>(), N, I, O);
    if constexpr (std::is_same_v<T, bf16>) {
      float* xf = ctx.scratch.get(0, N * I);
      float* wf = ctx.scratch.get(1, O * I);
      float* of = ctx.scratch.get(2, N * O);
      widen(ctx.pool, x.as<bf16>(), xf, N * I);
      widen(ctx.pool, w.as<bf16>(), wf, O * I);
      gemm(false, true, N, O, I, xf, wf, 0.0f, of);
      narrow(ctx.pool, of, out.as<bf16>(), N * O);
    } else {
      gemm(false, true, N, O, I, x.as<T>(), w.as<T>(), T(0), out.as<T>());
    }
  });
}

void linear_backward(const LinearContext& ctx, Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w,
                     bool accumulate_dx) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_backward(dx, dw, dout, x, w);
  dispatch_float(x.dtype, "linear_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    if (ctx.path == GemmPath::reference)
      return backward_reference(ctx.pool, dx.as<T>(), dw.as<A>(), dout.as<T>(), x.as<T>(), w.as<T>(), N, I, O,
                                accumulate_dx);
    if constexpr (std::is_same_v<T, bf16>) {
      float* df = ctx.scratch.get(0, N * O);
      float* wf = ctx.scratch.get(1, std::max(O * I, N * I));
      float* xf = ctx.scratch.get(2, N * I);
      widen(ctx.pool, dout.as<bf16>(), df, N * O);
      widen(ctx.pool, w.as<bf16>(), wf, O * I);
      if (accumulate_dx) widen(ctx.pool, dx.as<bf16>(), xf, N * I);
      gemm(false, false, N, I, O, df, wf, accumulate_dx ? 1.0f : 0.0f, xf);  // dx = dout @ w
      narrow(ctx.pool, xf, dx.as<bf16>(), N * I);
      widen(ctx.pool, x.as<bf16>(), wf, N * I);                  // reuse: x in fp32
      gemm(true, false, O, I, N, df, wf, 1.0f, dw.as<float>());  // dw += dout^T @ x
    } else {
      gemm(false, false, N, I, O, dout.as<T>(), w.as<T>(), accumulate_dx ? T(1) : T(0), dx.as<T>());
      gemm(true, false, O, I, N, dout.as<T>(), x.as<T>(), T(1), dw.as<A>());
    }
  });
}

}  // namespace mlpo::cpu
