// Hugging Face directories through the binary: a run exported as a directory is the start of
// another run that takes its model from config.json (no --model), and a damaged checkpoint
// exits 2 with one line naming the tensor, writing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/executor/train/process_util.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

class HfCli : public ::testing::Test {
 protected:
  void SetUp() override { data_ = test::make_token_file(dir_); }

  int run(std::vector<std::string> extra) {
    std::vector<std::string> argv = {MLPO_RUN_BIN,     "--seq-len", "16",      "--threads", "1",
                                     "--blas-threads", "1",         "--steps", "1",         "--state-dir",
                                     dir_ / "state",   "--quiet",   "--data",  data_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const int code = test::run_to_end(argv, dir_ / "out.txt");
    output_ = test::read_file(dir_ / "out.txt");
    return code;
  }

  TempDir dir_;
  std::string data_, output_;
};

TEST_F(HfCli, AnExportStartsARunThatTakesItsModelFromConfigJson) {
  ASSERT_EQ(run({"--model", "tiny", "--export-safetensors", dir_ / "hf"}), 0) << output_;
  ASSERT_TRUE(fs::exists(dir_ / "hf/config.json"));
  ASSERT_TRUE(fs::exists(dir_ / "hf/model.safetensors"));  // 1.7 MB: one shard, no index
  ASSERT_EQ(run({"--init-from", dir_ / "hf", "--export-safetensors", dir_ / "next.safetensors"}), 0)
      << output_;
  EXPECT_NE(output_.find("init: weights from " + dir_ / "hf" + " (BF16), fresh optimizer state"),
            std::string::npos)
      << output_;
  EXPECT_TRUE(fs::exists(dir_ / "next.safetensors"));
  // --model DIR/config.json is the same model.
  EXPECT_EQ(run({"--model", dir_ / "hf/config.json", "--init-from", dir_ / "hf"}), 0) << output_;
}

TEST_F(HfCli, ATruncatedCheckpointExitsTwoNamingTheTensor) {
  ASSERT_EQ(run({"--model", "tiny", "--export-safetensors", dir_ / "hf"}), 0) << output_;
  fs::resize_file(dir_ / "hf/model.safetensors", fs::file_size(dir_ / "hf/model.safetensors") - 2);
  EXPECT_EQ(run({"--init-from", dir_ / "hf", "--export-safetensors", dir_ / "next"}), 2) << output_;
  EXPECT_EQ(std::count(output_.begin(), output_.end(), '\n'), 1) << output_;
  EXPECT_NE(output_.find("tensor lm_head.weight"), std::string::npos) << output_;
  EXPECT_NE(output_.find("truncated"), std::string::npos) << output_;
  EXPECT_FALSE(fs::exists(dir_ / "next"));
}

}  // namespace
}  // namespace mlpo::train
