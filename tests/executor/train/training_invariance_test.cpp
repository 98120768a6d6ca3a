// Placement invariance of training: where the optimizer state lives (memory, one tier, two
// tiers with a cache and the alternating order, the baseline mode) must not change a single
// bit of the losses or the weights, and a run resumed from a checkpoint under another plan
// continues exactly like one that was never interrupted. Also what every step logs beside
// its loss.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/cpu_ticks.hpp"
#include "executor/train/training_loop.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::tiny_params;

using Outcome = test::TrainedRun;
constexpr auto run = test::train_and_export;

TrainOptions base_options(const std::string& data) {
  TrainOptions o = test::tiny_train_options(data);
  o.steps = 6;
  o.grad_accum = 2;
  o.seed = 11;
  o.lr = LrSchedule{3e-3, 3e-4, 2, 6};
  o.max_grad_norm = 0.5;  // small enough that clipping is active on some steps
  return o;
}

// A temporary directory with the token file and the two tier folders `a` and `b`, and
// base_options() on that file.
class TwoTierRun : public ::testing::Test {
 protected:
  TwoTierRun() {
    fs::create_directories(dir / "a");
    fs::create_directories(dir / "b");
  }
  TempDir dir;
  const std::int64_t params = tiny_params();
  TrainOptions o = base_options(test::make_token_file(dir));
};
using TrainingPlacementInvariance = TwoTierRun;
using TrainingResume = TwoTierRun;

TEST_F(TrainingPlacementInvariance, SameLossesAndWeightsUnderEveryPlan) {
  o.plan = test::memory_plan(params);
  const Outcome memory = run(o, dir / "memory.safetensors");
  o.plan = test::one_tier_plan(params, dir / "a");
  const Outcome one = run(o, dir / "one.safetensors");
  o.plan = test::two_tier_plan(params, dir / "a", dir / "b");
  const Outcome two = run(o, dir / "two.safetensors");
  o.plan = baseline_of(test::two_tier_plan(params, dir / "a", dir / "b"));
  const Outcome baseline = run(o, dir / "baseline.safetensors");

  ASSERT_EQ(memory.losses.size(), 6u);
  EXPECT_NE(memory.losses.front(), memory.losses.back());  // it did train
  EXPECT_EQ(one.losses, memory.losses);
  EXPECT_EQ(two.losses, memory.losses);
  EXPECT_EQ(baseline.losses, memory.losses);
  EXPECT_TRUE(one.weights == memory.weights) << "one-tier weights differ";
  EXPECT_TRUE(two.weights == memory.weights) << "two-tier weights differ";
  EXPECT_TRUE(baseline.weights == memory.weights) << "baseline weights differ";
  // The tier directories of finished runs are removed.
  EXPECT_FALSE(fs::exists(dir / "a/mlpo"));
}

TEST_F(TrainingResume, ContinuesBitwiseUnderAnotherPlan) {
  o.plan = test::memory_plan(params);
  const Outcome whole = run(o, dir / "whole.safetensors");

  // First half under the memory plan (a checkpoint at step 3), the rest under two tiers.
  TrainOptions first = o;
  first.steps = 3;
  first.checkpoint_dir = dir / "ckpt";
  const Outcome a = run(first, dir / "half.safetensors");
  TrainOptions second = o;
  second.plan = test::two_tier_plan(params, dir / "a", dir / "b");
  second.checkpoint_dir = dir / "ckpt";
  second.resume = true;
  const Outcome b = run(second, dir / "resumed.safetensors");

  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  EXPECT_EQ(joined, whole.losses);
  EXPECT_TRUE(b.weights == whole.weights) << "resumed weights differ from the uninterrupted run's";
}

// Parameter offload (weights in host memory, two parts at a time on the device) changes
// where the weights are read from, never a bit of the results.
TEST(TrainingParamOffload, SameLossesAndWeightsAsResidentWeights) {
  TempDir dir;
  TrainOptions o = base_options(test::make_token_file(dir));
  o.plan = test::memory_plan(tiny_params());
  const Outcome resident = run(o, dir / "resident.safetensors");
  o.param_offload = true;
  const Outcome offloaded = run(o, dir / "offloaded.safetensors");
  ASSERT_EQ(resident.losses.size(), 6u);
  EXPECT_EQ(offloaded.losses, resident.losses);
  EXPECT_TRUE(offloaded.weights == resident.weights) << "parameter offload changed the weights";
}

TEST(TrainingLearning, LossGoesDownOnRepetitiveText) {
  TempDir dir;
  TrainOptions o = base_options(test::make_token_file(dir));
  o.plan = test::memory_plan(tiny_params());
  o.steps = 25;
  o.lr = LrSchedule{3e-3, 3e-4, 3, 25};
  o.max_grad_norm = 1.0;
  const auto result = train(o, {});
  const double first = result.steps.front()["loss"].get<double>();
  const double last = result.steps.back()["loss"].get<double>();
  EXPECT_NEAR(first, std::log(256.0), 0.3);  // random init predicts ~uniformly
  EXPECT_LT(last, 0.75 * first) << "loss " << first << " -> " << last;
}

TEST(TrainingLog, EveryStepSaysHowMuchOfTheCpuTheHypervisorTook) {
  // cpu_steal: the share of the node's CPU time stolen during the step, from /proc/stat
  // (core/cpu_ticks.hpp), so that --validate can tell a slowed machine from a wrong model.
  if (!read_cpu_ticks()) GTEST_SKIP() << "no readable /proc/stat here";
  TempDir dir;
  TrainOptions o = base_options(test::make_token_file(dir));
  o.plan = test::memory_plan(tiny_params());
  o.steps = 2;
  for (const Json& rec : train(o, {}).steps) {
    ASSERT_TRUE(rec.contains("cpu_steal")) << rec.dump();
    EXPECT_GE(rec["cpu_steal"].get<double>(), 0.0);
    EXPECT_LE(rec["cpu_steal"].get<double>(), 1.0);
  }
}

}  // namespace
}  // namespace mlpo::train
