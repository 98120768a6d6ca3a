// The validation loss (--eval-data): bitwise the same under every plan and with streamed
// weights, logged only on its steps, and invisible to training (same losses and weights as a
// run without it). Across rank counts: tests/executor/train/zero_mpi_test.cpp.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "executor/train/training_loop.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

using test::TempDir;

using test::tiny_params;

struct EvalRun {
  std::vector<double> losses;
  std::vector<std::int64_t> eval_steps;
  std::vector<double> eval_losses;
  std::string weights;
};

class Evaluation : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = test::make_token_file(dir_);
    std::string held_out;
    for (int i = 0; i < 80; ++i)
      held_out += "while (j < m) total += y[j] * v[j++]; // " + std::to_string(i) + "\n";
    test::write_file(dir_ / "val.txt", held_out);
    data::prepare_data({dir_ / "val.txt"}, dir_ / "val.bin");
  }

  TrainOptions options() const {
    TrainOptions o = test::tiny_train_options(data_);
    o.steps = 4;
    o.grad_accum = 2;
    o.seed = 3;
    o.lr = LrSchedule{3e-3, 3e-4, 1, 4};
    o.plan = test::memory_plan(tiny_params());
    o.eval_data = {dir_ / "val.bin"};
    o.eval_every = 3;
    o.eval_tokens = 6 * 32;  // three micro-batches of two sequences
    return o;
  }

  EvalRun run(TrainOptions o) {
    o.export_safetensors = dir_ / "out.safetensors";
    EvalRun r;
    for (const Json& rec : train(o, {}).steps) {
      r.losses.push_back(rec.at("loss").get<double>());
      if (rec.contains("eval_loss")) {
        r.eval_steps.push_back(rec.at("step").get<std::int64_t>());
        r.eval_losses.push_back(rec.at("eval_loss").get<double>());
      }
    }
    r.weights = test::read_file(dir_ / "out.safetensors");
    return r;
  }

  TempDir dir_;
  std::string data_;
};

TEST_F(Evaluation, SameEvalLossBitwiseUnderEveryPlanAndWithStreamedWeights) {
  std::filesystem::create_directories(dir_ / "a");
  std::filesystem::create_directories(dir_ / "b");
  TrainOptions o = options();
  const EvalRun memory = run(o);
  o.plan = test::two_tier_plan(tiny_params(), dir_ / "a", dir_ / "b");
  const EvalRun tiers = run(o);
  o.plan = test::memory_plan(tiny_params());
  o.param_offload = true;
  const EvalRun streamed = run(o);

  EXPECT_EQ(memory.eval_steps, (std::vector<std::int64_t>{3, 4}));  // every 3 steps and after the last
  ASSERT_EQ(memory.eval_losses.size(), 2u);
  EXPECT_NEAR(memory.eval_losses[0], std::log(256.0), 1.0);
  EXPECT_NE(memory.eval_losses[0], memory.eval_losses[1]);
  EXPECT_EQ(tiers.eval_losses, memory.eval_losses);
  EXPECT_EQ(streamed.eval_losses, memory.eval_losses);
}

TEST_F(Evaluation, DoesNotChangeTheTrainingLossesOrWeights) {
  TrainOptions o = options();
  o.eval_every = 1;
  const EvalRun with = run(o);
  o.eval_data.clear();
  o.eval_every = 0;
  o.eval_tokens = 0;
  const EvalRun without = run(o);
  EXPECT_EQ(with.eval_losses.size(), 4u);
  EXPECT_TRUE(without.eval_losses.empty());
  EXPECT_EQ(with.losses, without.losses);
  EXPECT_TRUE(with.weights == without.weights) << "evaluation changed the trained weights";
}

TEST_F(Evaluation, MoreEvalTokensThanTheDataHoldsIsRefusedWithTheNumbers) {
  TrainOptions o = options();
  o.eval_tokens = 1 << 20;
  try {
    train(o, {});
    FAIL() << "accepted --eval-tokens beyond the eval data";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--eval-tokens 1048576: --eval-data " + dir_ / "val.bin" + " holds "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("give --eval-tokens <= "), std::string::npos) << what;
  }
  o = options();
  o.eval_data.clear();
  EXPECT_THROW(train(o, {}), Error);  // --eval-every without --eval-data
}

}  // namespace
}  // namespace mlpo::train
