#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/train/checkpoint.hpp"
#include "executor/train/safetensors.hpp"
#include "executor/train/training_loop.hpp"
#include "tests/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TrainOptions tiny_options(const TempDir& dir, const std::string& data) {
  TrainOptions o;
  o.model = test::tiny_model();
  o.data = data;
  o.steps = 3;
  o.micro_batch = 2;
  o.lr = LrSchedule{1e-3, 1e-4, 1, 6};
  o.threads = 2;
  o.blas_threads = 1;
  o.state_dir = dir / "state";
  o.checkpoint_dir = dir / "ckpt";
  o.checkpoint_every = 2;
  return o;
}

TEST(Checkpoint, KeepsOnlyTheLatestCompleteCheckpoint) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  train(o, {});
  EXPECT_EQ(test::read_file(dir / "ckpt/latest"), "ckpt-3\n");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "ckpt")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-3", "latest"}));  // ckpt-2 removed, no .tmp left
  for (const char* f : {"manifest.json", "model.safetensors", "optimizer.p.f32", "optimizer.m.f32", "optimizer.v.f32"})
    EXPECT_TRUE(fs::exists(dir / ("ckpt/ckpt-3/" + std::string(f)))) << f;
  const ParameterLayout layout(ModelShape{256, 128, 4, 4, 2, 384, 32});
  EXPECT_EQ(fs::file_size(dir / "ckpt/ckpt-3/optimizer.v.f32"), static_cast<std::uintmax_t>(layout.total()) * 4);
}

TEST(Checkpoint, WeightsUseHuggingFaceLlamaNamesAndShapes) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 1;
  train(o, {});
  const auto tensors = read_safetensors_header(dir / "ckpt/ckpt-1/model.safetensors");
  const ParameterLayout layout(ModelShape{256, 128, 4, 4, 2, 384, 32});
  ASSERT_EQ(tensors.size(), layout.entries().size());
  auto find = [&](const std::string& name) {
    for (const auto& t : tensors)
      if (t.name == name) return t;
    ADD_FAILURE() << "missing " << name;
    return SafetensorsTensor{};
  };
  EXPECT_EQ(find("model.embed_tokens.weight").shape, (std::vector<std::int64_t>{256, 128}));
  EXPECT_EQ(find("model.layers.3.self_attn.k_proj.weight").shape, (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(find("model.layers.0.mlp.down_proj.weight").shape, (std::vector<std::int64_t>{128, 384}));
  EXPECT_EQ(find("model.norm.weight").shape, (std::vector<std::int64_t>{128}));
  EXPECT_EQ(find("lm_head.weight").dtype, "BF16");
  std::uint64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.end - t.begin;
  EXPECT_EQ(bytes, static_cast<std::uint64_t>(layout.total()) * 2);
}

TEST(Checkpoint, CorruptStateFileIsRejectedOnOpen) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  train(o, {});
  std::string m = test::read_file(dir / "ckpt/ckpt-3/optimizer.m.f32");
  m[1000] = static_cast<char>(m[1000] ^ 1);
  test::write_file(dir / "ckpt/ckpt-3/optimizer.m.f32", m);
  try {
    Checkpoint::open_latest(dir / "ckpt", o.model, ParameterLayout(ModelShape{256, 128, 4, 4, 2, 384, 32}).total());
    FAIL() << "a corrupt checkpoint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer.m.f32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CRC32C"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, CheckpointOfAnotherModelIsRejected) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 1;
  train(o, {});
  ModelSpec other = o.model;
  other.hidden = 64;
  try {
    Checkpoint::open_latest(dir / "ckpt", other, 1000);
    FAIL() << "a checkpoint of another model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another model (hidden 128"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(Checkpoint::open_latest(dir / "nothing-here", o.model, 1).has_value());
}

}  // namespace
}  // namespace mlpo::train
