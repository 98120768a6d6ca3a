#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <functional>

#include "core/error.hpp"
#include "executor/io/capacity.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/checkpoint/checkpoint.hpp"
#include "executor/checkpoint/checkpoint_directory.hpp"
#include "executor/hf/safetensors.hpp"
#include "executor/train/training_loop.hpp"
#include "tests/executor/train/train_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using mlpo::testing::error_of;
using test::TempDir;
using test::tiny_params;

TrainOptions tiny_options(const TempDir& dir, const std::string& data) {
  TrainOptions o = test::tiny_train_options(data);
  o.steps = 3;
  o.lr = LrSchedule{1e-3, 1e-4, 1, 6};
  o.state_dir = dir / "state";
  o.checkpoint_dir = dir / "ckpt";
  o.checkpoint_every = 2;
  return o;
}

// The uninterrupted run the resumed ones are compared with: `steps` steps without
// checkpoints, its weights exported to whole.safetensors. Returns its options.
TrainOptions train_whole(const TempDir& dir, const std::string& data, std::int64_t steps) {
  TrainOptions whole = tiny_options(dir, data);
  whole.checkpoint_dir.clear();
  whole.steps = steps;
  whole.export_safetensors = dir / "whole.safetensors";
  train(whole, {});
  return whole;
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
  for (const char* f : {"manifest.json", "model.safetensors", "optimizer.rank0.p.f32",
                        "optimizer.rank0.m.f32", "optimizer.rank0.v.f32"})
    EXPECT_TRUE(fs::exists(dir / ("ckpt/ckpt-3/" + std::string(f)))) << f;
  const model::ParameterLayout layout(model::ModelShape{256, 128, 4, 4, 2, 384, 32});
  EXPECT_EQ(fs::file_size(dir / "ckpt/ckpt-3/optimizer.rank0.v.f32"),
            static_cast<std::uintmax_t>(layout.total()) * 4);
}

TEST(Checkpoint, WeightsUseHuggingFaceLlamaNamesAndShapes) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 1;
  train(o, {});
  const auto tensors = hf::read_safetensors_header(dir / "ckpt/ckpt-1/model.safetensors");
  const model::ParameterLayout layout(model::ModelShape{256, 128, 4, 4, 2, 384, 32});
  ASSERT_EQ(tensors.size(), layout.entries().size());
  auto find = [&](const std::string& name) {
    for (const auto& t : tensors)
      if (t.name == name) return t;
    ADD_FAILURE() << "missing " << name;
    return hf::SafetensorsTensor{};
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
  mlpo::testing::expect_refusal(
      [&] { checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params()); },
      {"optimizer.rank0.m.f32", "CRC32C"}, "a corrupt checkpoint was accepted");
}

// The single-file format written before data parallelism (mlpo.checkpoint/1, state files
// optimizer.{p,m,v}.f32 covering every parameter) still resumes, bit for bit.
TEST(Checkpoint, ResumesTheSingleFileFormatOfVersion1) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  const TrainOptions whole = train_whole(dir, data, 4);

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
    const std::string old_name = files["state"][0][a]["name"],
                      new_name = std::string("optimizer.") + a + ".f32";
    fs::rename(ckpt + "/" + old_name, ckpt + "/" + new_name);
    v1_files[a] = files["state"][0][a];
    v1_files[a]["name"] = new_name;
  }
  manifest["schema"] = "mlpo.checkpoint/1";
  manifest.erase("ranks");
  manifest.erase("manifest_crc32c");  // version 1 had no seal
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
  mlpo::testing::expect_refusal([&] { checkpoint::Checkpoint::open_latest(dir / "ckpt", other, 1000); },
                                {"another model (hidden 128"}, "a checkpoint of another model was accepted");
  EXPECT_FALSE(checkpoint::Checkpoint::open_latest(dir / "nothing-here", o.model, 1).has_value());
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// `latest` is the pointer, not the only record: with it gone, --resume continues from the
// newest complete ckpt-N (saying so) instead of starting over and deleting it.
TEST(Checkpoint, ResumeFallsBackToTheNewestCompleteCheckpointWhenLatestIsMissing) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  const TrainOptions whole = train_whole(dir, data, 6);

  TrainOptions first = tiny_options(dir, data);
  first.steps = 4;
  first.lr.decay_end = 6;
  train(first, {});
  fs::remove(dir / "ckpt/latest");
  TrainOptions second = whole;
  second.checkpoint_dir = dir / "ckpt";
  second.checkpoint_every = 2;
  second.resume = true;
  second.export_safetensors = dir / "resumed.safetensors";
  std::vector<std::string> notes;
  const auto result = train(second, {[&](const std::string& line) { notes.push_back(line); }, {}});
  EXPECT_EQ(result.summary["first_step"], 5);
  EXPECT_TRUE(test::read_file(dir / "resumed.safetensors") == test::read_file(dir / "whole.safetensors"));
  bool said = false;
  for (const auto& n : notes)
    said |=
        n.find("latest is missing; resuming from the newest complete checkpoint ckpt-4") != std::string::npos;
  EXPECT_TRUE(said) << "no note about the missing latest";
  EXPECT_EQ(entries(dir / "ckpt"), (std::vector<std::string>{"ckpt-6", "latest"}));
}

// A new run (no --resume) must not take over a directory holding checkpoints, even without
// `latest` or with only an unfinished one: its first checkpoint would delete them.
TEST(Checkpoint, NewRunRefusesADirectoryHoldingAnyCheckpoint) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 2;
  train(o, {});
  fs::remove(dir / "ckpt/latest");
  std::string error = error_of([&] { train(o, {}); });
  EXPECT_NE(error.find("already holds checkpoints of a run (ckpt-2)"), std::string::npos) << error;
  EXPECT_NE(error.find("--resume"), std::string::npos) << error;
  EXPECT_TRUE(fs::exists(dir / "ckpt/ckpt-2/manifest.json"));

  fs::rename(dir / "ckpt/ckpt-2", dir / "ckpt/ckpt-2.tmp");
  error = error_of([&] { train(o, {}); });
  EXPECT_NE(error.find("already holds checkpoints of a run (ckpt-2.tmp)"), std::string::npos) << error;
}

// A run of 4 steps whose checkpoint directory holds both ckpt-2 and ckpt-4 (complete), with
// `latest` naming ckpt-4; returns its options (resume on, steps 4).
TrainOptions two_complete_checkpoints(const TempDir& dir) {
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 2;
  train(o, {});
  fs::copy(dir / "ckpt/ckpt-2", dir / "saved-ckpt-2");
  o.steps = 4;
  o.resume = true;
  train(o, {});
  fs::copy(dir / "saved-ckpt-2", dir / "ckpt/ckpt-2");
  return o;
}

// A run resumed behind a later complete checkpoint (latest pointed back at ckpt-2 while ckpt-4
// exists) writes ckpt-3 and must keep ckpt-4.
TEST(Checkpoint, NeverRemovesACheckpointNewerThanTheOneWritten) {
  TempDir dir;
  TrainOptions o = two_complete_checkpoints(dir);
  test::write_file(dir / "ckpt/latest", "ckpt-2\n");
  o.steps = 3;
  o.checkpoint_every = 1;
  train(o, {});
  EXPECT_EQ(test::read_file(dir / "ckpt/latest"), "ckpt-3\n");
  EXPECT_EQ(entries(dir / "ckpt"), (std::vector<std::string>{"ckpt-3", "ckpt-4", "latest"}));
}

// The manifest carries its own CRC32C: an edited data position (or any other field) is an
// error naming the manifest, never a silent resume; so is any other changed byte.
TEST(Checkpoint, EditedManifestIsRejected) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  train(o, {});
  const std::string path = dir / "ckpt/ckpt-3/manifest.json";
  const std::string original = test::read_file(path);
  Json manifest = Json::parse(original);
  ASSERT_TRUE(manifest.contains("manifest_crc32c"));
  test::write_file(path, manifest.dump(4));
  EXPECT_NE(error_of([&] {
              checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params());
            }).find(path + ": its bytes differ"),
            std::string::npos);
  test::write_file(path, original);
  EXPECT_NO_THROW(checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params()));

  manifest["data_position"] = manifest["data_position"].get<std::int64_t>() + 2;
  test::write_file(path, manifest.dump(2));
  const std::string error =
      error_of([&] { checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params()); });
  EXPECT_NE(error.find(path + ": manifest_crc32c differs"), std::string::npos) << error;

  manifest = Json::parse(original);
  manifest.erase("manifest_crc32c");
  test::write_file(path, manifest.dump(2));
  EXPECT_NE(error_of([&] {
              checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params());
            }).find("no manifest_crc32c"),
            std::string::npos);
}

// A checkpoint written before the seal (mlpo.checkpoint/2) still loads, with a warning.
TEST(Checkpoint, ManifestOfVersion2WithoutSealLoadsWithAWarning) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  train(o, {});
  const std::string path = dir / "ckpt/ckpt-3/manifest.json";
  Json manifest = Json::parse(test::read_file(path));
  manifest.erase("manifest_crc32c");
  manifest["schema"] = "mlpo.checkpoint/2";
  test::write_file(path, manifest.dump(2));
  const auto c = checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->position().step, 3);
  ASSERT_EQ(c->notes().size(), 1u);
  EXPECT_NE(c->notes()[0].find("without manifest_crc32c"), std::string::npos) << c->notes()[0];
}

// A damaged newest checkpoint is an error — with or without `latest` — that names the file
// and the older complete checkpoint to fall back to by hand; it is never skipped silently.
TEST(Checkpoint, DamagedNewestCheckpointIsAnErrorNamingTheOlderOne) {
  TempDir dir;
  TrainOptions o = two_complete_checkpoints(dir);
  std::string v = test::read_file(dir / "ckpt/ckpt-4/optimizer.rank0.v.f32");
  v[40] = static_cast<char>(v[40] ^ 0x10);
  test::write_file(dir / "ckpt/ckpt-4/optimizer.rank0.v.f32", v);
  for (bool with_latest : {true, false}) {
    if (!with_latest) fs::remove(dir / "ckpt/latest");
    const std::string error =
        error_of([&] { checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params()); });
    EXPECT_NE(error.find("ckpt-4/optimizer.rank0.v.f32: CRC32C differs"), std::string::npos) << error;
    EXPECT_NE(error.find("ckpt-2 is an older complete checkpoint: remove " + dir / "ckpt/ckpt-4"),
              std::string::npos)
        << error;
  }
}

// A write that fails half-way (here the file-size limit, as a full disk would) leaves no
// ckpt-N.tmp behind, and the previous checkpoint stays the one `latest` names.
TEST(Checkpoint, FailedWriteLeavesNoPartialCheckpoint) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.plan = test::memory_plan(tiny_params());  // no tier files: only the checkpoint writes big files
  o.steps = 1;
  train(o, {});
  o.steps = 2;
  o.resume = true;
  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = static_cast<rlim_t>(tiny_params()) * 3;  // the bf16 weights fit, fp32 p does not
  ::setrlimit(RLIMIT_FSIZE, &small);
  const std::string error = error_of([&] { train(o, {}); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find("ckpt-2.tmp/optimizer.rank0.p.f32: write failed"), std::string::npos) << error;
  EXPECT_EQ(entries(dir / "ckpt"), (std::vector<std::string>{"ckpt-1", "latest"}));
  const auto c = checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->position().step, 1);
}

// Room for a checkpoint is checked before the run: refused with both numbers and the fix.
TEST(Checkpoint, RunWithoutRoomForACheckpointIsRefusedBeforeItStarts) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.model = find_preset("mlpo-280b");  // a 3.9 TB checkpoint, far more than any test machine's disk
  o.model.seq_len = 32;
  const std::uint64_t needed = checkpoint::checkpoint_bytes(static_cast<std::int64_t>(270e9), 1, 1);
  if (io::free_bytes(dir.path(), "test") >= needed)
    GTEST_SKIP() << "the temp dir has room for a 280B checkpoint";
  const std::string error = error_of([&] { train(o, {}); });
  EXPECT_NE(error.find("--checkpoint-dir " + dir / "ckpt" + ": a checkpoint needs "), std::string::npos)
      << error;
  EXPECT_NE(error.find(" free; free space there, or choose a --checkpoint-dir"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir / "ckpt"));
  EXPECT_FALSE(fs::exists(dir / "state"));
}

// A loss or gradient norm that is not finite stops the run before the update, naming the
// step; the last checkpoint is untouched and loads.
TEST(Checkpoint, NonFiniteStepStopsTheRunAndKeepsTheLastCheckpoint) {
  TempDir dir;
  TrainOptions o = tiny_options(dir, test::make_token_file(dir));
  o.steps = 8;
  o.checkpoint_every = 1;
  o.lr = LrSchedule{1e3, 1e3, 0, 8};  // diverges within a few steps
  std::int64_t logged = 0;
  const std::string error = error_of([&] { train(o, {{}, [&](const Json& rec) { logged = rec["step"]; }}); });
  const std::string expect = "step " + std::to_string(logged + 1) + ": the loss is ";
  EXPECT_EQ(error.rfind(expect, 0), 0u) << error;
  EXPECT_NE(error.find("(not finite); the run stops before updating the weights"), std::string::npos)
      << error;
  EXPECT_NE(error.find("ckpt-" + std::to_string(logged) + ", is untouched"), std::string::npos) << error;
  ASSERT_GT(logged, 0);
  const auto c = checkpoint::Checkpoint::open_latest(dir / "ckpt", o.model, tiny_params());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->position().step, logged);
}

}  // namespace
}  // namespace mlpo::train
