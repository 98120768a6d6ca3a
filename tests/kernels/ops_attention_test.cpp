#include "tests/kernels/backend_fixture.hpp"

namespace mlpo::testing {
namespace {

// Grouped-query: 4 query heads share 2 kv heads.
constexpr reference::AttentionShape kShape{2, 7, 4, 2, 8};
constexpr int kQ = kShape.B * kShape.T * kShape.Hq * kShape.D;
constexpr int kKV = kShape.B * kShape.T * kShape.Hkv * kShape.D;

TEST(AttentionReference, BackwardMatchesFiniteDifferences) {
  const Vec q = random_vec(kQ, 1), k = random_vec(kKV, 2), v = random_vec(kKV, 3), R = random_vec(kQ, 4);
  const auto g = reference::attention_backward(R, q, k, v, kShape);
  EXPECT_LT(
      normalized_error(
          g.dq, numeric_gradient(
                    [&](const Vec& x) { return dot(reference::attention_forward(x, k, v, kShape), R); }, q)),
      kFiniteDifferenceTolerance);
  EXPECT_LT(
      normalized_error(
          g.dk, numeric_gradient(
                    [&](const Vec& x) { return dot(reference::attention_forward(q, x, v, kShape), R); }, k)),
      kFiniteDifferenceTolerance);
  EXPECT_LT(
      normalized_error(
          g.dv, numeric_gradient(
                    [&](const Vec& x) { return dot(reference::attention_forward(q, k, x, kShape), R); }, v)),
      kFiniteDifferenceTolerance);
}

TEST_P(BackendOps, AttentionMatchesReferenceForEveryStorageType) {
  for (DType t : storage_types()) {
    SCOPED_TRACE(dtype_name(t));
    BackendRunner& run = runner();
    const Vec q = rounded(random_vec(kQ, 11), t), k = rounded(random_vec(kKV, 12), t),
              v = rounded(random_vec(kKV, 13), t);
    const Vec dout = rounded(random_vec(kQ, 14), t);
    const AttentionRun got = run_attention(run, t, q, k, v, dout, kShape);
    EXPECT_LT(normalized_error(got.out, reference::attention_forward(q, k, v, kShape)), tolerance(t));
    EXPECT_LT(normalized_error(got.lse, reference::attention_lse(q, k, kShape)), tolerance(acc_type(t)));
    const auto g = reference::attention_backward(dout, q, k, v, kShape);
    EXPECT_LT(normalized_error(got.dq, g.dq), tolerance(t));
    EXPECT_LT(normalized_error(got.dk, g.dk), tolerance(t));
    EXPECT_LT(normalized_error(got.dv, g.dv), tolerance(t));
  }
}

// Attention as at initialisation: small q and k (scores near 0, probabilities near uniform)
// and values sharing a common component, as a normed residual stream's projections do. Then
// out_t is close to that common mean and dp_j - delta_t is a small difference of large
// numbers: delta taken from the bf16-rounded out was off by about its rounding error and put
// dq, dk 10-90 % off the exact gradient. Computed as sum_j p_j dp_j in fp32 it is exact to
// fp32, and dq, dk carry only their own bf16 rounding.
TEST_P(BackendOps, AttentionQueryAndKeyGradientsMatchReferenceWhenAttentionIsNearUniform) {
  const reference::AttentionShape s{1, 48, 2, 1, 32};
  const int nq = s.B * s.T * s.Hq * s.D, nkv = s.B * s.T * s.Hkv * s.D;
  const DType t = DType::bf16;
  const Vec q = rounded(random_vec(nq, 51, 0.05), t), k = rounded(random_vec(nkv, 52, 0.05), t);
  const Vec common = random_vec(s.D, 53), noise = random_vec(nkv, 54, 0.02);
  Vec v(nkv);
  for (int i = 0; i < nkv; ++i) v[i] = common[i % s.D] + noise[i];
  v = rounded(v, t);
  const Vec dout = rounded(random_vec(nq, 55), t);
  BackendRunner& run = runner();
  const AttentionRun got = run_attention(run, t, q, k, v, dout, s);
  const auto want = reference::attention_backward(dout, q, k, v, s);
  EXPECT_LT(normalized_error(got.dq, want.dq), tolerance(t));
  EXPECT_LT(normalized_error(got.dk, want.dk), tolerance(t));
  EXPECT_GT(cosine(got.dq, want.dq), 0.9999);
  EXPECT_GT(cosine(got.dk, want.dk), 0.9999);
  EXPECT_LT(normalized_error(got.dv, want.dv), tolerance(t));
}

TEST(AttentionCpu, MultiHeadWithoutGroupingMatchesReference) {
  const reference::AttentionShape s{1, 5, 3, 3, 4};
  const int nq = s.B * s.T * s.Hq * s.D;
  OpRunner run;
  const Vec q = random_vec(nq, 21), k = random_vec(nq, 22), v = random_vec(nq, 23), dout = random_vec(nq, 24);
  const AttentionRun got = run_attention(run, DType::f64, q, k, v, dout, s);
  const auto g = reference::attention_backward(dout, q, k, v, s);
  EXPECT_LT(normalized_error(got.out, reference::attention_forward(q, k, v, s)), tolerance(DType::f64));
  EXPECT_LT(normalized_error(got.dk, g.dk), tolerance(DType::f64));
}

// The CPU kernel works in blocks of 64 queries: 150 positions are two whole blocks and a
// ragged one, each with its own causal diagonal.
TEST(AttentionCpu, SeveralQueryBlocksMatchReference) {
  const reference::AttentionShape s{1, 150, 4, 2, 16};
  const int nq = s.B * s.T * s.Hq * s.D, nkv = s.B * s.T * s.Hkv * s.D;
  for (DType t : {DType::f64, DType::bf16}) {
    SCOPED_TRACE(dtype_name(t));
    OpRunner run;
    const Vec q = rounded(random_vec(nq, 61), t), k = rounded(random_vec(nkv, 62), t),
              v = rounded(random_vec(nkv, 63), t), dout = rounded(random_vec(nq, 64), t);
    const AttentionRun got = run_attention(run, t, q, k, v, dout, s);
    const auto g = reference::attention_backward(dout, q, k, v, s);
    EXPECT_LT(normalized_error(got.out, reference::attention_forward(q, k, v, s)), tolerance(t));
    EXPECT_LT(normalized_error(got.lse, reference::attention_lse(q, k, s)), tolerance(acc_type(t)));
    EXPECT_LT(normalized_error(got.dq, g.dq), tolerance(t));
    EXPECT_LT(normalized_error(got.dk, g.dk), tolerance(t));
    EXPECT_LT(normalized_error(got.dv, g.dv), tolerance(t));
  }
}

TEST(AttentionCpu, FutureKeysAndValuesDoNotChangeEarlierOutputs) {
  OpRunner run;
  const Vec q = random_vec(kQ, 31), k = random_vec(kKV, 32), v = random_vec(kKV, 33),
            dout = random_vec(kQ, 34);
  Vec k2 = k, v2 = v;
  const int last = kShape.T - 1;  // perturb the last position of every batch and kv head
  for (int b = 0; b < kShape.B; ++b)
    for (int i = 0; i < kShape.Hkv * kShape.D; ++i) {
      k2[(b * kShape.T + last) * kShape.Hkv * kShape.D + i] += 5.0;
      v2[(b * kShape.T + last) * kShape.Hkv * kShape.D + i] -= 3.0;
    }
  const Vec a = run_attention(run, DType::f64, q, k, v, dout, kShape).out;
  const Vec c = run_attention(run, DType::f64, q, k2, v2, dout, kShape).out;
  for (int b = 0; b < kShape.B; ++b)
    for (int t = 0; t < kShape.T; ++t)
      for (int i = 0; i < kShape.Hq * kShape.D; ++i) {
        const std::size_t idx = (static_cast<std::size_t>(b) * kShape.T + t) * kShape.Hq * kShape.D + i;
        if (t < last) {
          EXPECT_EQ(a[idx], c[idx]);
        }
      }
  EXPECT_NE(a, c);  // the last position does see the change
}

TEST(AttentionCpu, BackwardIsBitwiseIndependentOfThreadCount) {
  const Vec q = random_vec(kQ, 41), k = random_vec(kKV, 42), v = random_vec(kKV, 43),
            dout = random_vec(kQ, 44);
  OpRunner one(1), three(3);
  const AttentionRun a = run_attention(one, DType::bf16, q, k, v, dout, kShape);
  const AttentionRun b = run_attention(three, DType::bf16, q, k, v, dout, kShape);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
}

}  // namespace
}  // namespace mlpo::testing
