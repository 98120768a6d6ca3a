// Bad input to `mlpo-run`: each case exits 2 with one line naming the input, and leaves the
// checkpoint directory and the export file exactly as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/plan.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/data/token_file.hpp"
#include "tests/executor/train/process_util.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// Every file under `root` with its bytes.
std::map<std::string, std::string> snapshot(const std::string& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(root)) return files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[e.path().string()] = test::read_file(e.path().string());
  return files;
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = test::make_token_file(dir_);
    // A good run with a checkpoint to resume from.
    ASSERT_EQ(run({"--steps", "2", "--checkpoint-dir", dir_ / "ckpt"}), 0) << output_;
    before_ = snapshot(dir_ / "ckpt");
    ASSERT_FALSE(before_.empty());
  }

  int run(std::vector<std::string> extra, bool with_data = true) {
    std::vector<std::string> argv = {MLPO_RUN_BIN, "--model", "tiny",           "--seq-len", "16",
                                     "--threads",  "1",       "--blas-threads", "1",         "--quiet"};
    // The default plan's directory (--state-dir and --plan together are an error).
    if (std::find(extra.begin(), extra.end(), "--plan") == extra.end())
      argv.insert(argv.end(), {"--state-dir", dir_ / "state"});
    if (with_data) argv.insert(argv.end(), {"--data", data_});
    argv.insert(argv.end(), extra.begin(), extra.end());
    const int code = test::run_to_end(argv, dir_ / "out.txt");
    output_ = test::read_file(dir_ / "out.txt");
    return code;
  }

  // Exit 2, one line containing `needle`, nothing changed, no export written.
  void expect_rejected(int code, const std::string& needle) {
    EXPECT_EQ(code, 2) << output_;
    EXPECT_EQ(std::count(output_.begin(), output_.end(), '\n'), 1) << output_;
    EXPECT_NE(output_.find(needle), std::string::npos) << output_;
    EXPECT_TRUE(snapshot(dir_ / "ckpt") == before_) << "the checkpoint directory was modified";
    EXPECT_FALSE(fs::exists(dir_ / "out.safetensors"));
  }

  TempDir dir_;
  std::string data_, output_;
  std::map<std::string, std::string> before_;
};

TEST_F(BadInput, MissingDataFile) {
  expect_rejected(run({"--data", dir_ / "nope.bin", "--checkpoint-dir", dir_ / "ckpt", "--resume",
                       "--export-safetensors", dir_ / "out.safetensors"},
                      false),
                  "nope.bin");
}

TEST_F(BadInput, AttentionPathOnTheCpuBackendNamesTheFix) {
  expect_rejected(run({"--attention", "gemm", "--checkpoint-dir", dir_ / "ckpt", "--resume"}),
                  "--attention gemm: chooses the GPU's attention kernels");
  EXPECT_NE(output_.find("--backend cuda"), std::string::npos) << output_;
}

TEST_F(BadInput, UnknownAttentionPath) {
  EXPECT_EQ(run({"--attention", "flash", "--backend", "cuda"}), 2) << output_;
  EXPECT_NE(output_.find("--attention"), std::string::npos) << output_;
  EXPECT_NE(output_.find("gemm"), std::string::npos) << output_;
}

TEST_F(BadInput, TokensOutsideTheModelsVocab) {
  const std::vector<std::uint16_t> tokens = {1,  2,  3,  999, 4,  5,  6,  7,  8,  9,
                                             10, 11, 12, 13,  14, 15, 16, 17, 18, 19};
  std::string bytes(tokens.size() * 2, '\0');
  std::memcpy(bytes.data(), tokens.data(), bytes.size());
  test::write_file(dir_ / "wide.bin", bytes);
  expect_rejected(run({"--data", dir_ / "wide.bin", "--checkpoint-dir", dir_ / "ckpt", "--resume",
                       "--export-safetensors", dir_ / "out.safetensors"},
                      false),
                  "token 999 at position 3 is outside the model's vocabulary of 256");
}

TEST_F(BadInput, DataMadeWithALargerTokenizerThanTheModelsVocab) {
  std::string tokens(2 * 40, '\0');
  test::write_file(dir_ / "spm.bin",
                   data::shard_header(1, 40, 32000) + tokens);  // header[3]: the tokenizer's vocab
  expect_rejected(
      run({"--data", dir_ / "spm.bin", "--checkpoint-dir", dir_ / "ckpt", "--resume", "--export-safetensors",
           dir_ / "out.safetensors"},
          false),
      "spm.bin: was tokenized with a vocabulary of 32000 tokens (its header records it), but the model's "
      "vocabulary is 256");
}

TEST_F(BadInput, MissingTokenizerFile) {
  expect_rejected(
      run({"--tokenizer", dir_ / "tokenizer.model", "--checkpoint-dir", dir_ / "ckpt", "--resume"}),
      "--tokenizer " + dir_ / "tokenizer.model" + ": no such file; give a SentencePiece model");
}

TEST_F(BadInput, PrepareDataWithAMissingTokenizerFile) {
  test::write_file(dir_ / "text.txt", "hello");
  const int code = test::run_to_end({MLPO_RUN_BIN, "prepare-data", "--input", dir_ / "text.txt", "--out",
                                     dir_ / "t.bin", "--tokenizer", dir_ / "none.model"},
                                    dir_ / "out.txt");
  output_ = test::read_file(dir_ / "out.txt");
  expect_rejected(code, "--tokenizer " + dir_ / "none.model" + ": no such file");
  EXPECT_FALSE(fs::exists(dir_ / "t.bin"));
}

// A GPU that cannot be used: on a machine without one CUDA's reason ("no usable CUDA device:
// CUDA driver version is insufficient ..."), on a GPU machine "no such GPU"; never a CPU run.
TEST_F(BadInput, CudaBackendThatCannotBeServed) {
  expect_rejected(run({"--backend", "cuda:999", "--checkpoint-dir", dir_ / "ckpt", "--resume",
                       "--export-safetensors", dir_ / "out.safetensors"}),
                  "--backend cuda:999: ");
}

TEST_F(BadInput, UnknownBackend) {
  expect_rejected(run({"--backend", "tpu", "--checkpoint-dir", dir_ / "ckpt", "--resume"}),
                  "unknown compute backend 'tpu'");
}

TEST_F(BadInput, PlanForAnotherModel) {
  Plan plan = test::memory_plan(18'000'000);
  plan.model_name = "small";
  save_plan(plan, dir_ / "small-plan.json");
  expect_rejected(run({"--plan", dir_ / "small-plan.json", "--checkpoint-dir", dir_ / "ckpt", "--resume",
                       "--export-safetensors", dir_ / "out.safetensors"}),
                  "--plan: made for a model of 18000000 parameters");
}

TEST_F(BadInput, UnreadableCheckpoint) {
  const std::string manifest = dir_ / "ckpt/ckpt-2/manifest.json";
  test::write_file(manifest, "{ not json");
  before_ = snapshot(dir_ / "ckpt");
  expect_rejected(
      run({"--checkpoint-dir", dir_ / "ckpt", "--resume", "--export-safetensors", dir_ / "out.safetensors"}),
      "manifest.json");
}

TEST_F(BadInput, CheckpointOfAnotherModel) {
  test::write_file(
      dir_ / "other.json",
      R"({"schema": "mlpo.model/1", "name": "other", "vocab": 256, "hidden": 64, "layers": 4, "heads": 4,
                       "kv_heads": 2, "ffn_hidden": 384, "seq_len": 16})");
  std::vector<std::string> argv = {"--checkpoint-dir", dir_ / "ckpt", "--resume", "--export-safetensors",
                                   dir_ / "out.safetensors"};
  const int code = [&] {
    std::vector<std::string> full = {
        MLPO_RUN_BIN, "--model", dir_ / "other.json", "--threads",   "1", "--quiet",
        "--data",     data_,     "--state-dir",       dir_ / "state"};
    full.insert(full.end(), argv.begin(), argv.end());
    const int c = test::run_to_end(full, dir_ / "out.txt");
    output_ = test::read_file(dir_ / "out.txt");
    return c;
  }();
  expect_rejected(code, "checkpoint is of another model (hidden 128");
}

TEST_F(BadInput, CheckpointDirectoryOfAnotherRunWithoutResume) {
  expect_rejected(run({"--checkpoint-dir", dir_ / "ckpt", "--export-safetensors", dir_ / "out.safetensors"}),
                  "pass --resume");
}

}  // namespace
}  // namespace mlpo::train

namespace mlpo::train {
namespace {

// Checked before anything is printed: on the old code the default plan (two lines) came first.
TEST_F(BadInput, MinLrAboveLrIsOneLineWithoutTheDefaultPlan) {
  expect_rejected(run({"--lr", "1e-3", "--min-lr", "1e-2", "--export-safetensors", dir_ / "out.safetensors"}),
                  "--min-lr: must be between 0 and --lr");
}

// "resume: no checkpoint ... yet" waits until every input is checked.
TEST_F(BadInput, NoCheckpointYetIsNotNotedBeforeAnError) {
  Plan plan = test::memory_plan(18'000'000);
  save_plan(plan, dir_ / "small-plan.json");
  expect_rejected(
      run({"--plan", dir_ / "small-plan.json", "--checkpoint-dir", dir_ / "empty-ckpt", "--resume"}),
      "--plan: made for a model of 18000000 parameters");
}

// Refused before training: on the old code the run trained and failed only at the export.
TEST_F(BadInput, ExportPathThatIsADirectory) {
  // A path ending in .safetensors is one file (any other path is a Hugging Face directory export).
  fs::create_directories(dir_ / "export-dir.safetensors");
  expect_rejected(run({"--steps", "2", "--checkpoint-dir", dir_ / "ckpt", "--resume", "--export-safetensors",
                       dir_ / "export-dir.safetensors"}),
                  "--export-safetensors " + (dir_ / "export-dir.safetensors") + ": is a directory");
}

TEST_F(BadInput, LogPathThatIsADirectory) {
  fs::create_directories(dir_ / "log-dir");
  expect_rejected(
      run({"--steps", "3", "--checkpoint-dir", dir_ / "ckpt", "--resume", "--log", dir_ / "log-dir"}),
      "--log " + (dir_ / "log-dir") + ": is a directory");
}

TEST_F(BadInput, CheckpointDirectoryThatIsAFile) {
  test::write_file(dir_ / "ckpt-file", "x");
  expect_rejected(run({"--checkpoint-dir", dir_ / "ckpt-file", "--resume"}), "exists and is not a directory");
}

}  // namespace
}  // namespace mlpo::train
