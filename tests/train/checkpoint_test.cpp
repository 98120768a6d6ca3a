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
  o.data = {data};
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
  for (const char* f : {"manifest.json", "model.safetensors", "optimizer.rank0.p.f32", "optimizer.rank0.m.f32", "optimizer.rank0.v.f32"})
    EXPECT_TRUE(fs::exists(dir / ("ckpt/ckpt-3/" + std::string(f)))) << f;
  const ParameterLayout layout(ModelShape{256, 128, 4, 4, 2, 384, 32});
  EXPECT_EQ(fs::file_size(dir / "ckpt/ckpt-3/optimizer.rank0.v.f32"), static_cast<std::uintmax_t>(layout.total()) * 4);
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
  std::string m = test::read_file(dir / "ckpt/ckpt-3/optimizer.rank0.m.f32");
  m[1000] = static_cast<char>(m[1000] ^ 1);
  test::write_file(dir / "ckpt/ckpt-3/optimizer.rank0.m.f32", m);
  try {
    Checkpoint::open_latest(dir / "ckpt", o.model, ParameterLayout(ModelShape{256, 128, 4, 4, 2, 384, 32}).total());
    FAIL() << "a corrupt checkpoint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer.rank0.m.f32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CRC32C"), std::string::npos) << e.what();
  }
}

// The single-file format written before data parallelism (mlpo.checkpoint/1, state files
// optimizer.{p,m,v}.f32 covering every parameter) still resumes, bit for bit.
TEST(Checkpoint, ResumesTheSingleFileFormatOfVersion1) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  TrainOptions whole = tiny_options(dir, data);
  whole.checkpoint_dir.clear();
  whole.steps = 4;
  whole.export_safetensors = dir / "whole.safetensors";
  train(whole, {});

  TrainOptions first = whole;
  first.steps = 2;
  first.checkpoint_dir = dir / "ckpt";
  first.export_safetensors.clear();
  train(first, {});
  // Rewrite the checkpoint as version 1.
  const std::string ckpt = dir / "ckpt/ckpt-2";
  Json manifest = Json::parse(test::read_file(ckpt + "/manifest.json"));
  Json files = manifest["files"];
  ASSERT_EQ(files["state"].size(), 1u);
  Json v1_files{{"weights", files["weights"]}};
  for (const char* a : {"p", "m", "v"}) {
    const std::string old_name = files["state"][0][a]["name"], new_name = std::string("optimizer.") + a + ".f32";
    fs::rename(ckpt + "/" + old_name, ckpt + "/" + new_name);
    v1_files[a] = files["state"][0][a];
    v1_files[a]["name"] = new_name;
  }
  manifest["schema"] = "mlpo.checkpoint/1";
  manifest.erase("ranks");
  manifest["files"] = v1_files;
  test::write_file(ckpt + "/manifest.json", manifest.dump(2));

  TrainOptions second = whole;
  second.checkpoint_dir = dir / "ckpt";
  second.resume = true;
  second.export_safetensors = dir / "resumed.safetensors";
  const auto result = train(second, {});
  EXPECT_EQ(result.summary["first_step"], 3);
  EXPECT_TRUE(test::read_file(dir / "resumed.safetensors") == test::read_file(dir / "whole.safetensors"));
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
