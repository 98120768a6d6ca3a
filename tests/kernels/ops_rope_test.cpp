#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

constexpr int B = 2, T = 9, H = 3, D = 8;
constexpr double kTheta = 10000.0;

TEST(RopeReference, BackwardMatchesFiniteDifferences) {
  const Vec x = random_vec(B * T * H * D, 1), R = random_vec(B * T * H * D, 2);
  const Vec num = numeric_gradient(
      [&](const Vec& v) { return dot(reference::rope_forward(v, B, T, H, D, kTheta), R); }, x);
  EXPECT_LT(normalized_error(reference::rope_backward(R, B, T, H, D, kTheta), num),
            kFiniteDifferenceTolerance);
}

TEST_P(BackendOps, RopeMatchesReferenceForEveryStorageTypeAndWorksInPlace) {
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec x = rounded(random_vec(B * T * H * D, 3), t), dout = rounded(random_vec(B * T * H * D, 4), t);
    Tensor tx = run.upload(x, t, {B, T, H, D}), out = run.empty(t, {B, T, H, D});
    run.backend().rope_forward(out, tx, static_cast<float>(kTheta));
    EXPECT_LT(normalized_error(run.download(out), reference::rope_forward(x, B, T, H, D, kTheta)),
              tolerance(t));
    Tensor d = run.upload(dout, t, {B, T, H, D});
    run.backend().rope_backward(d, d, static_cast<float>(kTheta));  // in place, as the model uses it
    EXPECT_LT(normalized_error(run.download(d), reference::rope_backward(dout, B, T, H, D, kTheta)),
              tolerance(t));
  }
}

TEST(RopeCpu, PositionZeroIsIdentityAndRotationKeepsPairNorms) {
  OpRunner run;
  const Vec x = random_vec(B * T * H * D, 5);
  Tensor out = run.empty(DType::f64, {B, T, H, D});
  run.backend().rope_forward(out, run.upload(x, DType::f64, {B, T, H, D}), static_cast<float>(kTheta));
  const Vec y = run.download(out);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < D / 2; ++i) {
          const std::size_t base = ((static_cast<std::size_t>(b) * T + t) * H + h) * D;
          const double before = std::hypot(x[base + i], x[base + i + D / 2]);
          const double after = std::hypot(y[base + i], y[base + i + D / 2]);
          EXPECT_NEAR(after, before, 1e-12);
          if (t == 0) {
            EXPECT_EQ(y[base + i], x[base + i]);
          }
        }
}

}  // namespace
}  // namespace mlpo::testing
