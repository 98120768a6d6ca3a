#include "tests/kernels/ops_test_util.hpp"

namespace mlpo::testing {
namespace {

constexpr int N = 7, I = 24, O = 10;

TEST(LinearReference, BackwardMatchesFiniteDifferences) {
  const Vec x = random_vec(N * I, 1), w = random_vec(O * I, 2), R = random_vec(N * O, 3);
  const auto g = reference::linear_backward(R, x, w, N, I, O);
  expect_backward_matches_finite_differences(
      [](const Vec& xv, const Vec& wv) { return reference::linear_forward(xv, wv, N, I, O); }, x, w, R, g.dx,
      g.dw);
}

// Both GEMM paths, every storage type: forward, dx (overwritten and accumulated), dw (+=).
TEST(LinearCpu, BothPathsMatchReferenceForEveryStorageType) {
  for (cpu::GemmPath path : {cpu::GemmPath::blas, cpu::GemmPath::reference})
    for (DType t : kStorageTypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (path == cpu::GemmPath::blas ? " blas" : " reference"));
      OpRunner run(2, path);
      const Vec x = rounded(random_vec(N * I, 11), t), w = rounded(random_vec(O * I, 12), t);
      const Vec dout = rounded(random_vec(N * O, 13), t);
      const Vec dw0 = rounded(random_vec(O * I, 14), acc_type(t)), dx0 = rounded(random_vec(N * I, 15), t);
      Tensor tx = run.upload(x, t, {N, I}), tw = run.upload(w, t, {O, I}), tout = run.empty(t, {N, O});
      run.backend().linear_forward(tout, tx, tw);
      EXPECT_LT(normalized_error(run.download(tout), reference::linear_forward(x, w, N, I, O)), tolerance(t));

      const auto g = reference::linear_backward(dout, x, w, N, I, O);
      Tensor tdout = run.upload(dout, t, {N, O}), tdx = run.empty(t, {N, I}),
             tdw = run.upload(dw0, acc_type(t), {O, I});
      run.backend().linear_backward(tdx, tdw, tdout, tx, tw, /*accumulate_dx=*/false);
      EXPECT_LT(normalized_error(run.download(tdx), g.dx), tolerance(t));
      EXPECT_LT(normalized_error(run.download(tdw), plus(dw0, g.dw)), tolerance(acc_type(t)));

      Tensor tdx_acc = run.upload(dx0, t, {N, I});
      run.backend().linear_backward(tdx_acc, tdw, tdout, tx, tw, /*accumulate_dx=*/true);
      EXPECT_LT(normalized_error(run.download(tdx_acc), plus(dx0, g.dx)), tolerance(t));
    }
}

// Shapes whose GEMMs the blas path cuts into two column blocks, the last one ragged (out 50 =
// 32 + 18 columns, dx's 40 = 32 + 8), against the float64 reference in every storage type.
TEST(LinearCpu, BlasColumnBlocksMatchReference) {
  const int n = 33, in = 40, out = 50;
  for (DType t : kStorageTypes) {
    SCOPED_TRACE(dtype_name(t));
    OpRunner run(2, cpu::GemmPath::blas);
    const Vec x = rounded(random_vec(n * in, 41), t), w = rounded(random_vec(out * in, 42), t);
    const Vec dout = rounded(random_vec(n * out, 43), t),
              dw0 = rounded(random_vec(out * in, 44), acc_type(t));
    Tensor tx = run.upload(x, t, {n, in}), tw = run.upload(w, t, {out, in}), tout = run.empty(t, {n, out});
    run.backend().linear_forward(tout, tx, tw);
    EXPECT_LT(normalized_error(run.download(tout), reference::linear_forward(x, w, n, in, out)),
              tolerance(t));
    const auto g = reference::linear_backward(dout, x, w, n, in, out);
    Tensor tdx = run.empty(t, {n, in}), tdw = run.upload(dw0, acc_type(t), {out, in});
    run.backend().linear_backward(tdx, tdw, run.upload(dout, t, {n, out}), tx, tw, false);
    EXPECT_LT(normalized_error(run.download(tdx), g.dx), tolerance(t));
    EXPECT_LT(normalized_error(run.download(tdw), plus(dw0, g.dw)), tolerance(acc_type(t)));
  }
}

TEST(LinearCpu, BlasAndReferencePathsAgreeOnBf16Closely) {
  // Same bf16 inputs, fp32 arithmetic in both: results differ at most by one bf16 rounding.
  const Vec x = random_vec(N * I, 21), w = random_vec(O * I, 22);
  OpRunner blas(2, cpu::GemmPath::blas), ref(2, cpu::GemmPath::reference);
  Tensor ob = blas.empty(DType::bf16, {N, O}), orf = ref.empty(DType::bf16, {N, O});
  blas.backend().linear_forward(ob, blas.upload(x, DType::bf16, {N, I}), blas.upload(w, DType::bf16, {O, I}));
  ref.backend().linear_forward(orf, ref.upload(x, DType::bf16, {N, I}), ref.upload(w, DType::bf16, {O, I}));
  EXPECT_LT(normalized_error(blas.download(ob), ref.download(orf)), 8e-3);
}

}  // namespace
}  // namespace mlpo::testing

namespace mlpo::testing {
namespace {

// Large enough for two column blocks per GEMM: fresh backends with the same blas_threads (2),
// same inputs, same bits (forward, dx and the accumulated dw) — run to run and on pools of 1, 2
// and 3 threads, which run the blocks on different threads or one after the other.
TEST(LinearCpu, BlasPathIsBitwiseReproducible) {
  const int n = 256, in = 384, out = 512;
  const Vec x = random_vec(n * in, 31), w = random_vec(out * in, 32), dout = random_vec(n * out, 33);
  std::vector<Vec> runs;
  for (unsigned threads : {2u, 2u, 1u, 3u}) {
    OpRunner run(threads, cpu::GemmPath::blas);
    Tensor tx = run.upload(x, DType::bf16, {n, in}), tw = run.upload(w, DType::bf16, {out, in});
    Tensor o = run.empty(DType::bf16, {n, out}), dx = run.empty(DType::bf16, {n, in});
    Tensor dw = run.upload(Vec(out * in, 0.0), DType::f32, {out, in});
    run.backend().linear_forward(o, tx, tw);
    run.backend().linear_backward(dx, dw, run.upload(dout, DType::bf16, {n, out}), tx, tw, false);
    Vec all = run.download(o);
    for (const Tensor& t : {dx, dw}) {
      const Vec v = run.download(t);
      all.insert(all.end(), v.begin(), v.end());
    }
    runs.push_back(std::move(all));
  }
  for (std::size_t r = 1; r < runs.size(); ++r) EXPECT_EQ(runs[0], runs[r]) << "run " << r;
}

}  // namespace
}  // namespace mlpo::testing
