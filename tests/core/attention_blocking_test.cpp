// The GEMM attention's blocking (core/attention_blocking.hpp): what the CUDA backend sizes its
// scratch by and the tuner counts, so it is checked here without a GPU.
#include "core/attention_blocking.hpp"

#include <gtest/gtest.h>

namespace mlpo {
namespace {

TEST(AttentionBlocking, ShortSequencesAreOneBlockWithEveryPairInOneCall) {
  const AttentionBlocking b = attention_blocking({4, 7, 8, 2, 64});
  EXPECT_EQ(b.rows, 7);
  EXPECT_EQ(b.group, 4);
  EXPECT_EQ(b.pairs, 8);  // B * Hkv
}

TEST(AttentionBlocking, LongSequencesAreCutIntoCausalBlocksWithinTheScoreBound) {
  const AttentionDims d{4, 2048, 16, 8, 128};  // the 0.9B bench model
  const AttentionBlocking b = attention_blocking(d);
  EXPECT_EQ(b.rows, kMaxBlockRows);
  EXPECT_EQ(b.group, 2);
  EXPECT_EQ(b.pairs, 16);  // 2^25 / (512 * 2 * 2048)
  EXPECT_LE(b.score_elements(d.T), kMaxScoreElements);
}

TEST(AttentionBlocking, RowsHalveUntilOnePairFitsThenPairsFillTheBound) {
  const AttentionBlocking b = attention_blocking({2, 100, 4, 2, 64}, 4096);
  EXPECT_EQ(b.rows, 13);  // 100 -> 50 -> 25 -> 13: 13 * 2 * 104 = 2704 <= 4096
  EXPECT_EQ(b.pairs, 1);
  const AttentionBlocking c = attention_blocking({2, 100, 4, 2, 64}, 65536);
  EXPECT_EQ(c.rows, 100);
  EXPECT_EQ(c.pairs, 3);  // 65536 / (100 * 2 * 104)
}

TEST(AttentionBlocking, ScoreRowsAreAlignedToEightElements) {
  EXPECT_EQ(AttentionBlocking::score_ld(1), 8);
  EXPECT_EQ(AttentionBlocking::score_ld(8), 8);
  EXPECT_EQ(AttentionBlocking::score_ld(77), 80);
}

TEST(AttentionBlocking, WorkspaceCountsOperandsAccumulatorsAndOneBlockOfScores) {
  const AttentionDims d{1, 8, 2, 1, 16};  // every part a multiple of 256 bytes or less
  // q, dout, out: 256 B each (8*2*16*2 = 512 B -> 512); k, v: 8*16*2 = 256; dk, dv: 512;
  // scores 1 pair * 8 rows * 2 * ld 8 = 128 elements: fp32 512 each, bf16 256 each.
  EXPECT_EQ(attention_workspace_bytes(d, 2), 3 * 512 + 2 * 256 + 2 * 512 + 2 * 512 + 2 * 256);
  EXPECT_EQ(attention_workspace_bytes({0, 8, 2, 1, 16}, 2), 0u);
  EXPECT_GT(attention_workspace_bytes(d, 4), attention_workspace_bytes(d, 2));
}

}  // namespace
}  // namespace mlpo
