#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

constexpr int V = 11, C = 8, N = 20;

TEST(EmbeddingReference, BackwardMatchesFiniteDifferences) {
  const Tokens tokens = random_tokens(N, V, 1);
  const Vec table = random_vec(V * C, 2), R = random_vec(N * C, 3);
  const Vec num = numeric_gradient(
      [&](const Vec& tb) { return dot(reference::embedding_forward(tokens, tb, C), R); }, table);
  EXPECT_LT(normalized_error(reference::embedding_backward(tokens, R, V, C), num),
            kFiniteDifferenceTolerance);
}

TEST_P(BackendOps, EmbeddingMatchesReferenceForEveryStorageTypeWithRepeatedTokens) {
  const Tokens tokens = random_tokens(N, V, 4);  // 20 tokens over 11 ids: repeats guaranteed
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec table = rounded(random_vec(V * C, 5), t), dout = rounded(random_vec(N * C, 6), t);
    const Vec dtable0 = rounded(random_vec(V * C, 7), acc_type(t));
    Tensor tt = run.upload(table, t, {V, C}), tok = run.upload_tokens(tokens), out = run.empty(t, {N, C});
    run.backend().embedding_forward(out, tok, tt);
    EXPECT_EQ(run.download(out), reference::embedding_forward(tokens, table, C));  // a copy: exact
    Tensor dt = run.upload(dtable0, acc_type(t), {V, C});
    run.backend().embedding_backward(dt, tok, run.upload(dout, t, {N, C}));
    EXPECT_LT(
        normalized_error(run.download(dt), plus(dtable0, reference::embedding_backward(tokens, dout, V, C))),
        tolerance(acc_type(t)));
  }
}

TEST_P(BackendOps, EmbeddingRejectsTokenOutsideVocabulary) {
  BackendRunner& run = runner();
  Tokens tokens = random_tokens(N, V, 8);
  tokens[3] = V;
  Tensor out = run.empty(DType::f32, {N, C});
  EXPECT_THROW(run.backend().embedding_forward(out, run.upload_tokens(tokens),
                                               run.upload(random_vec(V * C, 9), DType::f32, {V, C})),
               Error);
}

}  // namespace
}  // namespace mlpo::testing
