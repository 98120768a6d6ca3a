#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

constexpr int N = 6, V = 19;

TEST(CrossEntropyReference, BackwardMatchesFiniteDifferences) {
  const Vec logits = random_vec(N * V, 1, 2.0);
  const Tokens targets = random_tokens(N, V, 2);
  const double scale = 1.0 / N;
  const Vec num = numeric_gradient(
      [&](const Vec& x) {
        const Vec l = reference::cross_entropy_forward(x, targets, N, V);
        return scale * dot(l, Vec(N, 1.0));
      },
      logits);
  EXPECT_LT(normalized_error(reference::cross_entropy_backward(logits, targets, N, V, scale), num),
            kFiniteDifferenceTolerance);
}

TEST_P(BackendOps, CrossEntropyMatchesReferenceForEveryStorageTypeAndBackwardInPlace) {
  const Tokens targets = random_tokens(N, V, 3);
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec logits = rounded(random_vec(N * V, 4, 3.0), t);
    Tensor tl = run.upload(logits, t, {N, V}), tt = run.upload_tokens(targets),
           losses = run.empty(acc_type(t), {N});
    run.backend().cross_entropy_forward(losses, tl, tt);
    EXPECT_LT(normalized_error(run.download(losses), reference::cross_entropy_forward(logits, targets, N, V)),
              tolerance(acc_type(t)));
    run.backend().cross_entropy_backward(tl, tl, tt, 0.25f);  // dlogits overwrite logits
    EXPECT_LT(
        normalized_error(run.download(tl), reference::cross_entropy_backward(logits, targets, N, V, 0.25)),
        tolerance(t));
  }
}

TEST_P(BackendOps, CrossEntropyUniformLogitsGiveLogVocab) {
  BackendRunner& run = runner();
  Tensor losses = run.empty(DType::f32, {N});
  run.backend().cross_entropy_forward(losses, run.upload(Vec(N * V, 0.5), DType::bf16, {N, V}),
                                      run.upload_tokens(random_tokens(N, V, 5)));
  for (double l : run.download(losses)) EXPECT_NEAR(l, std::log(double(V)), 1e-6);
}

TEST_P(BackendOps, CrossEntropyRejectsTargetOutsideVocabulary) {
  BackendRunner& run = runner();
  Tokens targets = random_tokens(N, V, 6);
  targets[0] = -1;
  Tensor losses = run.empty(DType::f32, {N});
  EXPECT_THROW(run.backend().cross_entropy_forward(
                   losses, run.upload(random_vec(N * V, 7), DType::f32, {N, V}), run.upload_tokens(targets)),
               Error);
}

}  // namespace
}  // namespace mlpo::testing
