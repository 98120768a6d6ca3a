#include "executor/offload/gradient_norm.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rank_shard.hpp"
#include "executor/update_only/synthetic_gradients.hpp"

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
        update_only::synthetic_gradients(7, 3, s.global_begin, g, pool);
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

TEST(ClipScale, OnlyShrinksAboveTheThreshold) {
  EXPECT_EQ(clip_scale(0.5, 1.0), 1.0f);
  EXPECT_NEAR(clip_scale(4.0, 1.0), 0.25f, 1e-6);
  EXPECT_EQ(clip_scale(1e9, 0.0), 1.0f);
}

}  // namespace mlpo::offload
