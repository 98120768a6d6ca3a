// --simulate: the prediction of exactly the plan given, whatever its sizes, with the bound
// resource per phase, the per-tier breakdown and whether it fits.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/simulate_plan.hpp"

namespace mlpo::tune {
namespace {

Plan off_grid_plan(const Profile& profile, const Accounting& a) {
  // None of these values is on the search's grid: 3 000 320-element subgroups, 7 cached, 5 buffers,
  // prefetch 3, a limit of 3 on two ranks, separate slots, 30/70 split.
  Plan p = mlpo::testing::plan_for(
      "1b", a.params.total, 1, 2,
      {mlpo::testing::plan_tier(profile, "nvme", 0.7, 3), mlpo::testing::plan_tier(profile, "pfs", 0.3, 1)});
  p.subgroup_elements = 3'000'320;
  p.host_cache_subgroups = 7;
  p.buffers = 5;
  p.prefetch_depth = 3;
  p.slot_scope = SlotScope::separate;
  return p;
}

TEST(SimulatePlan, SimulatesExactlyTheGivenOffGridPlan) {
  const Profile profile = mlpo::testing::io_bound_profile();
  const ModelSpec spec = find_preset("1b");
  const Accounting a = account(spec, ClusterShape{1, 2, 1, 0, 1});
  const Plan plan = off_grid_plan(profile, a);
  const PlanSimulation s = simulate_plan(plan, spec, profile, {});
  EXPECT_EQ(s.plan.subgroup_elements, 3'000'320);
  EXPECT_EQ(s.plan.host_cache_subgroups, 7);
  EXPECT_EQ(s.simulated.cache_hits, 7);  // alternating order: every cached subgroup hits
  ASSERT_EQ(s.simulated.prediction.tiers.size(), 2u);
  // Two ranks' reads of the non-cached subgroups, 12 B an element, split as placed.
  const double n = static_cast<double>((a.params_per_rank + 3'000'319) / 3'000'320);
  const double read = s.simulated.prediction.tiers[0].read_bytes + s.simulated.prediction.tiers[1].read_bytes;
  EXPECT_NEAR(read / (2 * 12.0 * 3'000'320.0 * (n - 7)), 1.0, 0.02);
  EXPECT_GT(s.simulated.prediction.tiers[1].read_bytes, 0);
  EXPECT_GT(s.simulated.prediction.update_s, 0);
  EXPECT_NE(s.analytic.update_bound.find("tier"), std::string::npos) << s.analytic.update_bound;
  EXPECT_FALSE(s.shortfall.has_value());
  const std::string text = format_simulation(s);
  for (const char* part : {"3000320 elements", "nvme", "pfs", "bound per phase", "fits host memory"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  const Json j = to_json(s);
  EXPECT_EQ(j["schema"], "mlpo.simulation/1");
  EXPECT_NEAR(j["prediction"]["update_s"].get<double>(), s.simulated.prediction.update_s, 1e-12);
  EXPECT_EQ(j["tiers"].size(), 2u);
  EXPECT_TRUE(j["fits"].get<bool>());
}

TEST(SimulatePlan, ExposedCollectivesAreShownOnlyWhenModelled) {
  Profile profile = mlpo::testing::io_bound_profile();
  const ModelSpec spec = find_preset("1b");
  const Plan plan = off_grid_plan(profile, account(spec, ClusterShape{1, 2, 1, 0, 1}));
  const PlanSimulation without = simulate_plan(plan, spec, profile, {});
  EXPECT_FALSE(to_json(without).contains("collectives"));
  EXPECT_EQ(format_simulation(without).find("exposed collectives"), std::string::npos);
  profile.comm.host_mpi.measured = true;
  profile.comm.host_mpi.all_gather_gbps.median = profile.comm.host_mpi.reduce_scatter_gbps.median = 1;
  const PlanSimulation with = simulate_plan(plan, spec, profile, {});
  const Json j = to_json(with);
  ASSERT_TRUE(j.contains("collectives"));
  EXPECT_GT(j["collectives"]["forward_exposed_s"].get<double>(), 0);
  EXPECT_GT(j["collectives"]["backward_exposed_s"].get<double>(), 0);
  EXPECT_NE(format_simulation(with).find("exposed collectives"), std::string::npos);
}

TEST(SimulatePlan, PlanThatDoesNotFitIsSimulatedAndItsShortfallNamed) {
  const Profile profile = mlpo::testing::io_bound_profile();
  const ModelSpec spec = find_preset("1b");
  const Accounting a = account(spec, ClusterShape{1, 2, 1, 0, 1});
  Plan plan = off_grid_plan(profile, a);
  plan.host_cache_subgroups = 1000;  // the whole state cached: 12+ GiB
  const PlanSimulation s = simulate_plan(plan, spec, profile, {}, std::int64_t{8} << 30);
  ASSERT_TRUE(s.shortfall.has_value());
  EXPECT_EQ(s.shortfall->resource, "host memory");
  EXPECT_NE(format_simulation(s).find("does not fit: host memory short by"), std::string::npos);
  EXPECT_FALSE(to_json(s)["fits"].get<bool>());
}

TEST(SimulatePlan, PlanForAnotherModelIsAnError) {
  const Profile profile = mlpo::testing::io_bound_profile();
  Plan plan = mlpo::testing::plan_for("1b", 12345, 1, 1, {mlpo::testing::plan_tier(profile, "nvme", 1.0)});
  EXPECT_THROW(simulate_plan(plan, find_preset("1b"), profile, {}), Error);
}

}  // namespace
}  // namespace mlpo::tune
