// Weight decay per element range: norm gains (exempt ranges) keep their weights while every
// other element decays, and cutting the same state into other subgroups and tiers changes no
// bit, even where an exempt range straddles a subgroup boundary.
#include "executor/offload/weight_decay_mask.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "executor/offload/update_pipeline.hpp"
#include "executor/update_only/synthetic_gradients.hpp"
#include "offload_test_util.hpp"

namespace mlpo::offload {

namespace {

struct Piece {
  std::int64_t offset, count;
  bool decays;
  bool operator==(const Piece&) const = default;
};

std::vector<Piece> pieces(const WeightDecayMask& mask, std::int64_t begin, std::int64_t count) {
  std::vector<Piece> out;
  mask.for_each_piece(begin, count, [&](std::int64_t o, std::int64_t n, bool d) {
    out.push_back({o, n, d});
  });
  return out;
}

// p, m, v after `steps` updates of `elements` elements under `plan`, with `mask`.
struct State {
  std::vector<float> p, m, v;
};
State run_updates(const Plan& plan, std::int64_t elements, const WeightDecayMask& mask,
                  const std::vector<bf16>& grads, int steps) {
  const RankShard shard = shard_for(elements, 1, 0);
  const SubgroupLayout layout(shard.elements, plan.subgroup_elements);
  const PipelineOptions options{plan.buffers, plan.prefetch_depth, plan.host_cache_subgroups, plan.gradients};
  io::PinnedBufferPool pool(pipeline_pool_bytes(layout, options));
  io::TierSet tiers(io_tiers_of(plan), io::TierSetOptions{&pool, Diagnostics{}});
  StateStore store(plan, shard, &tiers, "decay", false);
  ThreadPool threads(2);
  UpdatePipeline pipeline(store, pool, std::vector<io::TierSlots*>(tiers.size(), nullptr), threads, options);
  SubgroupCache cache(plan.host_cache_subgroups);
  pipeline.initialize([](std::int64_t i) { return update_only::synthetic_initial_weight(5, i); });
  pipeline.set_weight_decay_mask(mask);
  for (int s = 0; s < steps; ++s) {
    AdamWParams adam;
    adam.lr = 0.01f;
    adam.weight_decay = 10.0f;  // lr * wd = 0.1: a decayed weight loses a tenth per step
    adam.step = s + 1;
    auto plan_steps = cache.plan_iteration(update_order(plan.order, s, layout.count()),
                                           [&](std::int64_t g) { return store.resident(g); });
    pipeline.update(plan_steps, grads, adam, {});
  }
  State st;
  pipeline.visit_state([&](const Subgroup& sg, const float* p, const float* m, const float* v) {
    st.p.insert(st.p.end(), p, p + sg.elements);
    st.m.insert(st.m.end(), m, m + sg.elements);
    st.v.insert(st.v.end(), v, v + sg.elements);
  });
  return st;
}

}  // namespace

TEST(WeightDecayMask, KeepsTheShardsPartOfEachRangeSortedAndMerged) {
  RankShard shard = shard_for(3 * kNormChunk, 3, 1);  // global [4096, 8192)
  const WeightDecayMask mask({{8000, 9000}, {100, 200}, {4000, 4100}, {4090, 4200}, {5000, 5000}}, shard);
  ASSERT_EQ(mask.exempt().size(), 2u);
  EXPECT_EQ(mask.exempt()[0].begin, 0);
  EXPECT_EQ(mask.exempt()[0].end, 104);
  EXPECT_EQ(mask.exempt()[1].begin, 8000 - 4096);
  EXPECT_EQ(mask.exempt()[1].end, 4096);
  EXPECT_EQ(mask.exempt_elements(), 104 + 192);
}

TEST(WeightDecayMask, SplitsARangeAtTheExemptBoundaries) {
  const WeightDecayMask mask({{10, 20}, {30, 40}}, shard_for(kNormChunk, 1, 0));
  EXPECT_EQ(
      pieces(mask, 0, 50),
      (std::vector<Piece>{{0, 10, true}, {10, 10, false}, {20, 10, true}, {30, 10, false}, {40, 10, true}}));
  EXPECT_EQ(pieces(mask, 15, 20), (std::vector<Piece>{{0, 5, false}, {5, 10, true}, {15, 5, false}}));
  EXPECT_EQ(pieces(mask, 12, 5), (std::vector<Piece>{{0, 5, false}}));
  EXPECT_EQ(pieces(mask, 40, 8), (std::vector<Piece>{{0, 8, true}}));
  EXPECT_TRUE(pieces(mask, 5, 0).empty());
  EXPECT_EQ(pieces(WeightDecayMask(), 3, 7), (std::vector<Piece>{{0, 7, true}}));
}

TEST(UpdatePipelineDecay, ExemptElementsAreNotDecayedWhileOthersAre) {
  // Zero gradients: AdamW's step is 0, so only the decay moves a weight.
  testing::ScratchTiers dirs("decay-zero");
  const std::int64_t n = 3 * 16384 + 100;
  const std::vector<bf16> zero(static_cast<std::size_t>(n), float_to_bf16(0.0f));
  const WeightDecayMask mask({{16000, 17000}, {40000, 40064}}, shard_for(n, 1, 0));
  const State st = run_updates(dirs.plan(1.0, 0, OrderPolicy::ascending), n, mask, zero, 1);
  for (std::int64_t i = 0; i < n; ++i) {
    const bool exempt = (i >= 16000 && i < 17000) || (i >= 40000 && i < 40064);
    const float p0 = update_only::synthetic_initial_weight(5, i);
    if (exempt)
      ASSERT_EQ(st.p[static_cast<std::size_t>(i)], p0) << "exempt element " << i << " was decayed";
    else
      ASSERT_FLOAT_EQ(st.p[static_cast<std::size_t>(i)], 0.9f * p0) << "element " << i << " was not decayed";
  }
}

TEST(UpdatePipelineDecay, SameStateUnderAnySubgroupSizeAndTierSplit) {
  // Exempt ranges straddle the 16384- and 4096-element subgroup boundaries.
  testing::ScratchTiers dirs("decay-split");
  const std::int64_t n = 5 * 16384 + 333;
  std::vector<bf16> grads(static_cast<std::size_t>(n));
  ThreadPool threads(2);
  update_only::synthetic_gradients(5, 1, 0, grads, threads);
  const WeightDecayMask mask({{16300, 16500}, {4090, 4100}, {60000, 70000}}, shard_for(n, 1, 0));
  const State want = run_updates(dirs.plan(1.0, 0, OrderPolicy::ascending), n, mask, grads, 3);
  const State split =
      run_updates(dirs.plan(0.5, 2, OrderPolicy::alternating, 0, 4096, TierKind::other), n, mask, grads, 3);
  EXPECT_TRUE(split.p == want.p);
  EXPECT_TRUE(split.m == want.m);
  EXPECT_TRUE(split.v == want.v);
  // And the mask did something: without it the exempt weights move differently.
  const State unmasked =
      run_updates(dirs.plan(1.0, 0, OrderPolicy::ascending), n, WeightDecayMask(), grads, 3);
  EXPECT_NE(unmasked.p[16400], want.p[16400]);
  EXPECT_EQ(unmasked.p[20000], want.p[20000]);
}

}  // namespace mlpo::offload
