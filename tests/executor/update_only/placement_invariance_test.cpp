// The invariant of the technique: where the optimizer state lives does not change the
// numbers. 10 steps with the same seed under every plan shape give the same state digest.
#include <gtest/gtest.h>

#include "executor/update_only/update_only_run.hpp"
#include "tests/executor/offload/offload_test_util.hpp"
#include "tests/executor/update_only/update_only_test_util.hpp"

namespace mlpo::update_only {

namespace {

using offload::testing::ScratchTiers;

std::string digest_of(const Plan& plan, int ranks, bool baseline = false) {
  UpdateOnlyOptions o;
  o.plan = baseline ? baseline_of(plan) : plan;
  o.params = 200000;  // 12.2 subgroups of 16384: the last one is short
  o.ranks = ranks;
  o.steps = 10;
  o.seed = 42;
  o.state_hash = true;
  o.threads = 2;
  return run_update_only(o, {}).state_sha256;
}

}  // namespace

TEST(PlacementInvariance, SameStateDigestUnderEveryPlan) {
  ScratchTiers tiers("invariance");
  Plan memory;
  memory.model_name = "synthetic";
  memory.model_params = 1;
  memory.subgroup_elements = 16384;
  memory.tiers.push_back(PlanTier{"ram", "", TierKind::memory, 1.0, 0});

  const std::string reference = digest_of(memory, 1);
  ASSERT_EQ(reference.size(), 64u);
  struct Case {
    const char* name;
    Plan plan;
    int ranks;
    bool baseline;
  };
  const Case cases[] = {
      {"one disk tier", tiers.plan(1.0, 0, OrderPolicy::ascending), 1, false},
      {"disk+shm 50/50", tiers.plan(0.5, 0, OrderPolicy::ascending), 1, false},
      {"disk+shm 80/20", tiers.plan(0.8, 0, OrderPolicy::ascending), 1, false},
      {"disk+shm 50/50, shm streamed", tiers.plan(0.5, 0, OrderPolicy::ascending, 0, 16384, TierKind::other),
       1, false},
      {"cache on, alternating, shm streamed",
       tiers.plan(0.8, 3, OrderPolicy::alternating, 0, 16384, TierKind::other), 1, false},
      {"2 ranks, baseline, shm streamed",
       tiers.plan(0.5, 0, OrderPolicy::ascending, 0, 16384, TierKind::other), 2, true},
      {"cache on, alternating", tiers.plan(0.8, 3, OrderPolicy::alternating), 1, false},
      {"cache on, ascending", tiers.plan(0.5, 3, OrderPolicy::ascending), 1, false},
      {"cache off, alternating", tiers.plan(0.5, 0, OrderPolicy::alternating), 1, false},
      {"baseline mode", tiers.plan(1.0, 0, OrderPolicy::ascending), 1, true},
      {"2 ranks, k=1", tiers.plan(0.8, 2, OrderPolicy::alternating, 1), 2, false},
      {"2 ranks, baseline", tiers.plan(0.5, 0, OrderPolicy::ascending), 2, true},
  };
  for (const auto& c : cases) EXPECT_EQ(digest_of(c.plan, c.ranks, c.baseline), reference) << c.name;
}

TEST(PlacementInvariance, DigestDependsOnTheSeed) {
  ScratchTiers tiers("seed");
  UpdateOnlyOptions o = testing::run_on(tiers.plan(1.0, 0, OrderPolicy::ascending), 50000, 2);
  o.state_hash = true;
  o.seed = 1;
  std::string a = run_update_only(o, {}).state_sha256;
  o.seed = 2;
  EXPECT_NE(run_update_only(o, {}).state_sha256, a);
}

}  // namespace mlpo::update_only
