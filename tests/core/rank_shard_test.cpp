#include "core/rank_shard.hpp"

#include <gtest/gtest.h>

namespace mlpo {
namespace {

TEST(RankShards, AreChunkAlignedAndCoverTheModel) {
  for (std::int64_t total : {1, 4095, 4097, 1000000, 853120}) {
    for (int ranks : {1, 2, 3, 4}) {
      std::int64_t expected_begin = 0;
      for (int r = 0; r < ranks; ++r) {
        RankShard s = shard_for(total, ranks, r);
        EXPECT_EQ(s.global_begin, expected_begin);
        if (s.elements > 0 && s.global_end() < total) {
          EXPECT_EQ(s.global_end() % kNormChunk, 0);
        }
        expected_begin = s.global_end();
      }
      EXPECT_EQ(expected_begin, total);
    }
  }
}

}  // namespace
}  // namespace mlpo
