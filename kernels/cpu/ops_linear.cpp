// Linear layers without bias: out = x @ w^T with w stored [out_features, in_features] as
// Hugging Face stores it. Two paths with one contract:
//  * reference: three nested loops, one output element per inner loop, threaded over rows.
//  * blas: OpenBLAS sgemm/dgemm. bf16 operands are widened to fp32 staging buffers first
//    (exact), the product is computed in fp32 and rounded to bf16 once. Weight gradients are
//    fp32 already and are accumulated in place (beta = 1).
// The GEMMs run single-threaded OpenBLAS calls on the ThreadPool, in the column blocks the
// CpuBackend's blas_threads fixes (kernels/cpu/internal/blas_gemm.hpp): bitwise reproducible run to run
// for a fixed count (tested), whatever the ThreadPool's size. A different count may change
// results in the last bits, which is why that count is pinned.
#include <algorithm>
#include <chrono>

#include "kernels/cpu/internal/blas_gemm.hpp"
#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {

// Adds the wall time of its scope to *slot (when the context collects stage times).
class StageClock {
 public:
  explicit StageClock(double* slot) : slot_(slot) {
    if (slot_) t0_ = std::chrono::steady_clock::now();
  }
  ~StageClock() {
    if (slot_) *slot_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;

 private:
  double* slot_;
  std::chrono::steady_clock::time_point t0_;
};

double* stage(const LinearContext& ctx, double LinearStageTimes::*field) {
  return ctx.times ? &(ctx.times->*field) : nullptr;
}

// bf16 <-> fp32 staging, vectorised (kernels/cpu/convert.hpp): exact widening, narrowing to
// nearest even, bit for bit mlpo::bf16_to_float / float_to_bf16.
void widen(const LinearContext& ctx, const bf16* src, float* dst, std::int64_t n) {
  const StageClock clock(stage(ctx, &LinearStageTimes::convert_s));
  bf16_to_fp32(ctx.pool, src, dst, static_cast<std::size_t>(n));
}

void narrow(const LinearContext& ctx, const float* src, bf16* dst, std::int64_t n) {
  const StageClock clock(stage(ctx, &LinearStageTimes::convert_s));
  fp32_to_bf16(ctx.pool, src, dst, static_cast<std::size_t>(n));
}

// C[M,N] = op(A) @ op(B) + beta * C on the pool, in the context's column blocks.
template <class T>
void gemm(const LinearContext& ctx, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
          std::int64_t K, const T* A, const T* B, T beta, T* C) {
  gemm_parallel(ctx.pool, ctx.gemm_parts, GemmOperands{trans_a, trans_b, M, N, K}, T(1), A, B, beta, C);
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
      widen(ctx, x.as<bf16>(), xf, N * I);
      widen(ctx, w.as<bf16>(), wf, O * I);
      {
        const StageClock clock(stage(ctx, &LinearStageTimes::forward_s));
        gemm(ctx, false, true, N, O, I, xf, wf, 0.0f, of);
      }
      narrow(ctx, of, out.as<bf16>(), N * O);
    } else {
      const StageClock clock(stage(ctx, &LinearStageTimes::forward_s));
      gemm(ctx, false, true, N, O, I, x.as<T>(), w.as<T>(), T(0), out.as<T>());
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
      widen(ctx, dout.as<bf16>(), df, N * O);
      widen(ctx, w.as<bf16>(), wf, O * I);
      if (accumulate_dx) widen(ctx, dx.as<bf16>(), xf, N * I);
      {
        const StageClock clock(stage(ctx, &LinearStageTimes::backward_dx_s));
        gemm(ctx, false, false, N, I, O, df, wf, accumulate_dx ? 1.0f : 0.0f, xf);  // dx = dout @ w
      }
      narrow(ctx, xf, dx.as<bf16>(), N * I);
      widen(ctx, x.as<bf16>(), wf, N * I);  // reuse: x in fp32
      const StageClock clock(stage(ctx, &LinearStageTimes::backward_dw_s));
      gemm(ctx, true, false, O, I, N, df, wf, 1.0f, dw.as<float>());  // dw += dout^T @ x
    } else {
      {
        const StageClock clock(stage(ctx, &LinearStageTimes::backward_dx_s));
        gemm(ctx, false, false, N, I, O, dout.as<T>(), w.as<T>(), accumulate_dx ? T(1) : T(0), dx.as<T>());
      }
      const StageClock clock(stage(ctx, &LinearStageTimes::backward_dw_s));
      gemm(ctx, true, false, O, I, N, dout.as<T>(), x.as<T>(), T(1), dw.as<A>());
    }
  });
}

}  // namespace mlpo::cpu
