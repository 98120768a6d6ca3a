// The SimGrid refinement: a plan that leaves host memory idle gets a larger cache and a faster
// prediction; the result is never slower than the plan it starts from and always fits; a plan
// that moves no state (all of it updated in place, or every subgroup cached) is left alone
// without a run.
#include <gtest/gtest.h>

#include "core/model_spec.hpp"
#include "simulator/iteration_model.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tests/support/update_only_request.hpp"
#include "tuner/internal/simulated_refine.hpp"

namespace mlpo::tune {
namespace {

TuneRequest request_on(const std::vector<std::string>& tiers, std::int64_t host_gib) {
  return mlpo::testing::update_only_request(tiers, host_gib);
}

// The 1b model's plan on one node of two ranks over `tiers`, before fill_fractions.
Plan plan_1b_on(const Accounting& a, std::vector<PlanTier> tiers) {
  return mlpo::testing::plan_for("1b", a.optimizer_bytes / kOptimizerStateBytes, 1, 2, std::move(tiers));
}

RankedPlan ranked(const Accounting& a, const TuneRequest& r, const Plan& p) {
  return RankedPlan{p, sim::analyze(a, r.profile, p, r.options), sim::simulate(a, r.profile, p, r.options)};
}

TEST(SimulatedRefine, GivesIdleHostMemoryToTheCacheAndIsFaster) {
  const TuneRequest r = request_on({"nvme"}, 16);
  const Accounting a = account(r.model, r.shape);
  Plan p = plan_1b_on(a, {mlpo::testing::plan_tier(r.profile, "nvme", 1)});
  ASSERT_TRUE(fill_fractions(a, r, p));
  ASSERT_FALSE(check_fits(a, p, r));  // no cache: most of the 16 GiB idle
  const RankedPlan start = ranked(a, r, p);
  std::size_t simulated = 0, moves = 0;
  const RankedPlan out = refine_simulated(a, r, start, simulated, moves);
  EXPECT_GT(simulated, 0u);
  EXPECT_GT(moves, 0u);
  EXPECT_GT(out.plan.host_cache_subgroups, 0);
  EXPECT_LT(out.simulated.prediction.update_s, 0.9 * start.simulated.prediction.update_s);
  EXPECT_FALSE(check_fits(a, out.plan, r));
  // What it reports is the plan's own simulation.
  EXPECT_DOUBLE_EQ(sim::simulate(a, r.profile, out.plan, r.options).prediction.update_s,
                   out.simulated.prediction.update_s);
}

TEST(SimulatedRefine, NeverReturnsASlowerPlanThanItStartsFrom) {
  const TuneRequest r = request_on({"nvme", "pfs"}, 6);
  const Accounting a = account(r.model, r.shape);
  Plan p = plan_1b_on(a, {mlpo::testing::plan_tier(r.profile, "nvme", 0.5, 1),
                          mlpo::testing::plan_tier(r.profile, "pfs", 0.5)});
  ASSERT_TRUE(fill_fractions(a, r, p));
  ASSERT_FALSE(check_fits(a, p, r));
  const RankedPlan start = ranked(a, r, p);
  std::size_t simulated = 0, moves = 0;
  const RankedPlan out = refine_simulated(a, r, start, simulated, moves);
  EXPECT_LE(out.simulated.prediction.update_s, start.simulated.prediction.update_s);
  EXPECT_FALSE(check_fits(a, out.plan, r));
  if (moves == 0) {
    EXPECT_EQ(to_json(out.plan), to_json(start.plan));
  }
}

TEST(SimulatedRefine, LeavesAPlanUpdatedInPlaceAloneWithoutARun) {
  const TuneRequest r = request_on({"shm"}, 64);
  const Accounting a = account(r.model, r.shape);
  Plan p = plan_1b_on(a, {mlpo::testing::plan_tier(r.profile, "shm", 1)});
  ASSERT_TRUE(fill_fractions(a, r, p));
  std::size_t simulated = 0, moves = 0;
  const RankedPlan out = refine_simulated(a, r, ranked(a, r, p), simulated, moves);
  EXPECT_EQ(simulated, 0u);
  EXPECT_EQ(moves, 0u);
  EXPECT_EQ(to_json(out.plan), to_json(p));
}

TEST(SimulatedRefine, LeavesAPlanThatCachesEverySubgroupAloneWithoutARun) {
  const TuneRequest r = request_on({"nvme"}, 64);
  const Accounting a = account(r.model, r.shape);
  Plan p = plan_1b_on(a, {mlpo::testing::plan_tier(r.profile, "nvme", 1)});
  p.host_cache_subgroups = (a.params_per_rank + p.subgroup_elements - 1) / p.subgroup_elements;
  ASSERT_TRUE(fill_fractions(a, r, p));
  ASSERT_FALSE(check_fits(a, p, r));
  std::size_t simulated = 0, moves = 0;
  refine_simulated(a, r, ranked(a, r, p), simulated, moves);
  EXPECT_EQ(simulated, 0u);
}

}  // namespace
}  // namespace mlpo::tune
