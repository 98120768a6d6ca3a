#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

constexpr int N = 5, C = 32;
constexpr double kEps = 1e-5;

TEST(RmsNormReference, BackwardMatchesFiniteDifferences) {
  const Vec x = random_vec(N * C, 1), w = random_vec(C, 2, 0.5), R = random_vec(N * C, 3);
  const auto g = reference::rmsnorm_backward(R, x, w, N, C, kEps);
  expect_backward_matches_finite_differences(
      [](const Vec& xv, const Vec& wv) { return reference::rmsnorm_forward(xv, wv, N, C, kEps); }, x, w, R,
      g.dx, g.dw);
}

TEST_P(BackendOps, RmsNormMatchesReferenceForEveryStorageType) {
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec x = rounded(random_vec(N * C, 11, 3.0), t), w = rounded(random_vec(C, 12, 0.5), t);
    const Vec dout = rounded(random_vec(N * C, 13), t), dw0 = rounded(random_vec(C, 14), acc_type(t));
    Tensor tx = run.upload(x, t, {N, C}), tw = run.upload(w, t, {C});
    Tensor out = run.empty(t, {N, C}), rstd = run.empty(acc_type(t), {N});
    run.backend().rmsnorm_forward(out, rstd, tx, tw, static_cast<float>(kEps));
    EXPECT_LT(
        normalized_error(run.download(out), reference::rmsnorm_forward(x, w, N, C, static_cast<float>(kEps))),
        tolerance(t));

    const auto g = reference::rmsnorm_backward(dout, x, w, N, C, static_cast<float>(kEps));
    Tensor dx = run.empty(t, {N, C}), dw = run.upload(dw0, acc_type(t), {C});
    run.backend().rmsnorm_backward(dx, dw, run.upload(dout, t, {N, C}), tx, tw, rstd);
    EXPECT_LT(normalized_error(run.download(dx), g.dx), tolerance(t));
    EXPECT_LT(normalized_error(run.download(dw), plus(dw0, g.dw)), tolerance(acc_type(t)));
  }
}

TEST_P(BackendOps, RmsNormOutputHasUnitRootMeanSquareWithUnitWeight) {
  BackendRunner& run = runner();
  Tensor x = run.upload(random_vec(N * C, 5, 7.0), DType::f32, {N, C}),
         w = run.upload(Vec(C, 1.0), DType::f32, {C});
  Tensor out = run.empty(DType::f32, {N, C}), rstd = run.empty(DType::f32, {N});
  run.backend().rmsnorm_forward(out, rstd, x, w, 0.0f);
  const Vec y = run.download(out);
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += y[n * C + c] * y[n * C + c] / C;
    EXPECT_NEAR(ms, 1.0, 1e-5);
  }
}

// dweight sums over rows; the split by channel must make the result independent of threads.
TEST(RmsNormCpu, BackwardIsBitwiseIndependentOfThreadCount) {
  std::vector<Vec> results;
  for (unsigned threads : {1u, 3u}) {
    OpRunner run(threads);
    const int n = 64, c = 48;
    Tensor x = run.upload(random_vec(n * c, 1), DType::bf16, {n, c}),
           w = run.upload(random_vec(c, 2), DType::bf16, {c});
    Tensor out = run.empty(DType::bf16, {n, c}), rstd = run.empty(DType::f32, {n});
    run.backend().rmsnorm_forward(out, rstd, x, w, 1e-5f);
    Tensor dx = run.empty(DType::bf16, {n, c}), dw = run.upload(Vec(c, 0.0), DType::f32, {c});
    run.backend().rmsnorm_backward(dx, dw, run.upload(random_vec(n * c, 3), DType::bf16, {n, c}), x, w, rstd);
    Vec all = run.download(out);
    for (const Tensor& t : {dx, dw}) {
      const Vec v = run.download(t);
      all.insert(all.end(), v.begin(), v.end());
    }
    results.push_back(all);
  }
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace mlpo::testing
