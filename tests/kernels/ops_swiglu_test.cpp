#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

constexpr int kN = 64;

TEST(SwigluReference, BackwardMatchesFiniteDifferences) {
  const Vec g = random_vec(kN, 1, 2.0), u = random_vec(kN, 2), R = random_vec(kN, 3);
  const auto grads = reference::swiglu_backward(R, g, u);
  expect_backward_matches_finite_differences(reference::swiglu_forward, g, u, R, grads.dgate, grads.dup);
}

TEST_P(BackendOps, SwigluMatchesReferenceForEveryStorageType) {
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec g = rounded(random_vec(kN, 11, 3.0), t), u = rounded(random_vec(kN, 12), t),
              d = rounded(random_vec(kN, 13), t);
    Tensor tg = run.upload(g, t, {kN}), tu = run.upload(u, t, {kN}), out = run.empty(t, {kN});
    run.backend().swiglu_forward(out, tg, tu);
    EXPECT_LT(normalized_error(run.download(out), reference::swiglu_forward(g, u)), tolerance(t));
    Tensor dg = run.empty(t, {kN}), du = run.empty(t, {kN});
    run.backend().swiglu_backward(dg, du, run.upload(d, t, {kN}), tg, tu);
    const auto ref = reference::swiglu_backward(d, g, u);
    EXPECT_LT(normalized_error(run.download(dg), ref.dgate), tolerance(t));
    EXPECT_LT(normalized_error(run.download(du), ref.dup), tolerance(t));
  }
}

}  // namespace
}  // namespace mlpo::testing
