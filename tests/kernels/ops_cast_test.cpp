#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

TEST_P(BackendOps, CastRoundsF32ToBf16NearestEvenAndWidensExactly) {
  BackendRunner& run = runner();
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: goes to the even one (1); 1 + 3*2^-8 goes up.
  const Vec values = {1.0, 1.00390625, 1.01171875, -2.5, 3.0e38, 1e-40};
  Tensor f = run.upload(values, DType::f32, {6}), h = run.empty(DType::bf16, {6}),
         back = run.empty(DType::f32, {6});
  run.backend().cast(h, f);
  run.backend().cast(back, h);
  const Vec got = run.download(back);
  EXPECT_EQ(got[0], 1.0);
  EXPECT_EQ(got[1], 1.0);
  EXPECT_EQ(got[2], 1.0 + 4.0 / 256);
  EXPECT_EQ(got[3], -2.5);
  EXPECT_EQ(got, rounded(values, DType::bf16));
}

TEST_P(BackendOps, AddAddsInAccumulatorTypeAndRoundsOnce) {
  BackendRunner& run = runner();
  const Vec a = rounded(random_vec(100, 1), DType::bf16), b = rounded(random_vec(100, 2), DType::bf16);
  Tensor ta = run.upload(a, DType::bf16, {100}), tb = run.upload(b, DType::bf16, {100});
  run.backend().add(ta, ta, tb);  // in place
  EXPECT_EQ(run.download(ta), rounded(plus(a, b), DType::bf16));
}

}  // namespace
}  // namespace mlpo::testing
