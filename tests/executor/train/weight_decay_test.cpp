// Weight decay in training: by default (--weight-decay-on matrices) the RMSNorm gains are not
// decayed while every matrix is; --weight-decay-on all decays the gains too. One step from
// the same init and data: the gradients are equal with and without decay, so a weight that
// is not decayed ends bitwise equal to the run without decay, and a decayed one does not.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/hf/safetensors.hpp"
#include "executor/train/training_loop.hpp"
#include "executor/train/internal/weight_decay_scope.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

using test::TempDir;

// The exported weights, by tensor name.
std::map<std::string, std::vector<float>> train_one_step(TrainOptions o, const std::string& path) {
  o.export_safetensors = path;
  train(o, {});
  const std::string bytes = test::read_file(path);
  std::map<std::string, std::vector<float>> out;
  for (const auto& t : hf::read_safetensors_header(path)) {
    std::vector<float>& w = out[t.name];
    for (std::uint64_t at = t.begin; at < t.end; at += 2) {
      bf16 x;
      std::memcpy(&x, bytes.data() + at, 2);
      w.push_back(bf16_to_float(x));
    }
  }
  return out;
}

double sum_squares(const std::vector<float>& w) {
  double s = 0;
  for (float x : w) s += static_cast<double>(x) * x;
  return s;
}

TEST(TrainingWeightDecay, NormGainsAreNotDecayedWhileMatricesAre) {
  TempDir dir;
  TrainOptions o = test::tiny_train_options(test::make_token_file(dir));
  o.steps = 1;
  o.seed = 3;
  o.lr = LrSchedule{1e-3, 1e-3, 0, 0};
  o.plan = test::two_tier_plan(test::tiny_params(), dir / "a", dir / "b");
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  o.weight_decay = 0.0f;
  const auto plain = train_one_step(o, dir / "plain.safetensors");
  o.weight_decay = 300.0f;  // lr * wd = 0.3: a decayed matrix keeps ~70 % of its weights
  const auto matrices = train_one_step(o, dir / "matrices.safetensors");
  o.weight_decay_on = "all";
  const auto all = train_one_step(o, dir / "all.safetensors");

  int norms = 0;
  for (const auto& [name, w] : plain) {
    const bool norm = name.find("norm") != std::string::npos;
    norms += norm;
    if (norm) {
      EXPECT_EQ(matrices.at(name), w) << name << " was decayed under --weight-decay-on matrices";
      EXPECT_NE(all.at(name), w) << name << " was not decayed under --weight-decay-on all";
    } else {
      EXPECT_LT(sum_squares(matrices.at(name)), 0.6 * sum_squares(w)) << name << " was not decayed";
      EXPECT_EQ(all.at(name), matrices.at(name)) << name;
    }
  }
  EXPECT_EQ(norms, 2 * 4 + 1);  // two per layer and the final norm
}

TEST(TrainingWeightDecay, MaskHoldsEveryNormGainOfTheShardAndNothingElse) {
  const model::ParameterLayout layout(model::ModelShape{256, 128, 4, 4, 2, 384, 32});
  std::int64_t covered = 0;
  for (int r = 0; r < 3; ++r) {
    const auto shard = shard_for(layout.total(), 3, r);
    const auto mask = weight_decay_mask(WeightDecayScope::matrices, layout, shard);
    for (const auto& e : mask.exempt())
      for (std::int64_t i = e.begin; i < e.end; ++i)
        EXPECT_TRUE(layout.entry_at(shard.global_begin + i).is_norm);
    covered += mask.exempt_elements();
    EXPECT_TRUE(weight_decay_mask(WeightDecayScope::all, layout, shard).exempt().empty());
  }
  EXPECT_EQ(covered, (2 * 4 + 1) * 128);
  EXPECT_THROW(parse_weight_decay_scope("norms", "--weight-decay-on"), Error);
}

}  // namespace
}  // namespace mlpo::train
