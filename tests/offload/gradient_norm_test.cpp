#include "executor/offload/gradient_norm.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rank_shard.hpp"
#include "executor/offload/state_digest.hpp"
#include "executor/offload/synthetic_gradients.hpp"

namespace mlpo::offload {

TEST(GlobalGradientNorm, SameBitsForAnyRankCountAndThreadCount) {
  const std::int64_t total = 3 * kNormChunk * 5 + 123;
  double reference = -1;
  for (int ranks : {1, 2, 3, 4}) {
    for (unsigned threads : {1u, 2u, 5u}) {
      ThreadPool pool(threads);
      std::vector<double> all;
      for (int r = 0; r < ranks; ++r) {
        RankShard s = shard_for(total, ranks, r);
        std::vector<bf16> g(static_cast<std::size_t>(s.elements));
        synthetic_gradients(7, 3, s.global_begin, g, pool);
        auto sums = chunk_square_sums(g, pool);
        all.insert(all.end(), sums.begin(), sums.end());
      }
      double norm = global_norm(all);
      if (reference < 0) reference = norm;
      EXPECT_EQ(norm, reference) << "ranks " << ranks << " threads " << threads;
    }
  }
  EXPECT_GT(reference, 0);
}

TEST(SyntheticGradients, ArePureFunctionsOfSeedStepAndIndex) {
  ThreadPool pool(2);
  std::vector<bf16> a(10000), b(10000);
  synthetic_gradients(1, 5, 1000, a, pool);
  synthetic_gradients(1, 5, 1000, b, pool);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].bits, b[i].bits);
    ASSERT_EQ(bf16_to_float(a[i]), synthetic_gradient(1, 5, 1000 + static_cast<std::int64_t>(i)));
  }
  synthetic_gradients(1, 6, 1000, b, pool);
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].bits == b[i].bits;
  EXPECT_LT(same, 100) << "another step must give other gradients";
}

TEST(ClipScale, OnlyShrinksAboveTheThreshold) {
  EXPECT_EQ(clip_scale(0.5, 1.0), 1.0f);
  EXPECT_NEAR(clip_scale(4.0, 1.0), 0.25f, 1e-6);
  EXPECT_EQ(clip_scale(1e9, 0.0), 1.0f);
}

TEST(StateDigestTest, ChangesWithAnyByteAndIsOrderSensitive) {
  std::vector<float> p(100, 1.0f), m(100, 2.0f), v(100, 3.0f);
  Sha256 a = chunk_digest(p.data(), m.data(), v.data(), 100);
  v[99] = 3.0000002f;
  Sha256 b = chunk_digest(p.data(), m.data(), v.data(), 100);
  EXPECT_NE(a, b);
  std::vector<Sha256> ab{a, b}, ba{b, a};
  EXPECT_NE(combine_digests(ab), combine_digests(ba));
  EXPECT_EQ(combine_digests(ab).size(), 64u);
}

}  // namespace mlpo::offload
