// Training through the Hugging Face directory format: --export-safetensors DIR writes a
// directory that --init-from reads back into exactly the weights that were exported (bf16,
// and fp32 master weights rounded to them), and a run started from it computes the same
// first-step loss as the run that exported it.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/hf_config.hpp"
#include "executor/train/training_loop.hpp"
#include "executor/data/prepare_data.hpp"
#include "tests/executor/train/tiny_tokenizer.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// lr 0 on every step (the cosine has reached --min-lr 0 at step 1): the weights stay as loaded.
constexpr LrSchedule kFrozen{1e-3, 0.0, 0, 1};

TrainOptions options(const std::string& data, std::int64_t steps) {
  TrainOptions o = test::tiny_train_options(data);
  o.steps = steps;
  o.seed = 3;
  o.lr = LrSchedule{3e-3, 3e-4, 0, steps};
  o.plan = test::memory_plan(853120);
  o.export_shard_bytes = 400'000;  // tiny's 1.7 MB of bf16 in several shards
  return o;
}

std::vector<double> losses(const TrainResult& r) {
  std::vector<double> out;
  for (const auto& rec : r.steps) out.push_back(rec["loss"].get<double>());
  return out;
}

// Trains `o` exporting to `to` (kept in `o`): the per-step losses.
std::vector<double> train_exporting(TrainOptions& o, const std::string& to) {
  o.export_safetensors = to;
  return losses(train(o, {}));
}

// Every file of directory `a` is in `b` with the same bytes, and `b` holds no other.
void expect_same_files(const std::string& a, const std::string& b) {
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(a)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(test::read_file(entry.path().string()) == test::read_file(b + "/" + name))
        << name << " differs";
    ++files;
  }
  EXPECT_EQ(files,
            static_cast<std::size_t>(std::distance(fs::directory_iterator(b), fs::directory_iterator())));
}

TEST(HfRoundTrip, ExportedDirectoryIsAShardedLlamaCheckpoint) {
  TempDir dir;
  TrainOptions o = options(test::make_token_file(dir), 1);
  o.export_safetensors = dir / "hf/";               // a directory, also when named with a trailing slash
  o.export_tokenizer_files = {dir / "corpus.txt"};  // stands in for a tokenizer.model
  train(o, {});
  const Json index = Json::parse(test::read_file(dir / "hf/model.safetensors.index.json"));
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"]["lm_head.weight"], "model-00005-of-00005.safetensors");
  EXPECT_EQ(index["metadata"]["total_size"], 853120 * 2);
  const Json config = Json::parse(test::read_file(dir / "hf/config.json"));
  EXPECT_EQ(config["architectures"], Json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["max_position_embeddings"], 32);
  EXPECT_TRUE(test::read_file(dir / "hf/corpus.txt") == test::read_file(dir / "corpus.txt"));
  EXPECT_FALSE(fs::exists(dir / "hf/model.safetensors"));
}

TEST(HfRoundTrip, TheRunsSentencePieceTokenizerIsExportedAsTokenizerModel) {
  TempDir dir;
  const data::PrepareDataOptions p = test::prepare_with_tiny_tokenizer(dir, 100, "text.txt", "tokens.bin");
  TrainOptions o = options(p.out, 1);
  o.model.vocab = 320;
  o.plan.reset();
  o.state_dir = dir / "state";
  o.tokenizer = p.tokenizer;
  o.export_safetensors = dir / "hf";
  train(o, {});
  EXPECT_TRUE(test::read_file(dir / "hf/tokenizer.model") == test::read_file(p.tokenizer));
  EXPECT_EQ(Json::parse(test::read_file(dir / "hf/config.json"))["vocab_size"], 320);
}

TEST(HfRoundTrip, InitFromAnExportComputesTheSameFirstLossAndWeights) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  // A: hashed init, frozen: its first loss is that of the weights it exports.
  TrainOptions a = options(data, 1);
  a.lr = kFrozen;
  const auto la = train_exporting(a, dir / "a");
  // B: the same run, but its weights come from A's export.
  TrainOptions b = a;
  b.init_from = dir / "a";
  b.export_safetensors = dir / "b";
  const TrainResult rb = train(b, {});
  EXPECT_EQ(rb.summary["init_from"], dir / "a");
  EXPECT_EQ(losses(rb), la);
  expect_same_files(dir / "a", dir / "b");
}

TEST(HfRoundTrip, TrainedWeightsSurviveExportAndImportInBf16AndFp32) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  TrainOptions a = options(data, 3);
  const auto la = train_exporting(a, dir / "a");
  EXPECT_NE(la.front(), la.back());  // it trained
  a.export_dtype = "fp32";
  EXPECT_EQ(train_exporting(a, dir / "a32"), la);
  EXPECT_EQ(Json::parse(test::read_file(dir / "a32/config.json"))["torch_dtype"], "float32");

  // Imported and exported again without an update: the bf16 weights are A's, bit for bit,
  // whether they were imported from bf16 or rounded from A's fp32 master weights.
  TrainOptions b = options(data, 3);  // 3 steps, as A: the shards' metadata record the step
  b.lr = kFrozen;
  b.init_from = dir / "a";
  const auto lb = train_exporting(b, dir / "b");
  expect_same_files(dir / "a", dir / "b");
  b.init_from = dir / "a32";
  EXPECT_EQ(train_exporting(b, dir / "c"), lb);
  expect_same_files(dir / "a", dir / "c");
}

TEST(HfRoundTrip, ModelAndConfigThatDifferAreRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  const std::string data = test::make_token_file(dir);
  TrainOptions a = options(data, 1);
  train_exporting(a, dir / "a");
  TrainOptions b = options(data, 1);
  b.model.ffn_hidden = 256;
  b.plan.reset();
  b.state_dir = dir / "state";
  b.init_from = dir / "a";
  b.export_safetensors = dir / "b";
  try {
    train(b, {});
    FAIL() << "trained from a checkpoint of another model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("intermediate_size 384, but --model tiny has 256"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "b"));
}

TEST(HfRoundTrip, ExportRefusesADirectoryHoldingOtherFiles) {
  TempDir dir;
  TrainOptions o = options(test::make_token_file(dir), 1);
  fs::create_directories(dir / "home");
  test::write_file(dir / "home/notes.txt", "mine");
  o.export_safetensors = dir / "home";
  try {
    train(o, {});
    FAIL() << "exported over a directory of other files";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds notes.txt"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_file(dir / "home/notes.txt"), "mine");
  // An earlier export is replaced as a whole: its extra shards do not survive.
  o.export_safetensors = dir / "hf";
  train(o, {});
  o.export_shard_bytes = 5'000'000'000;
  train(o, {});
  EXPECT_TRUE(fs::exists(dir / "hf/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "hf/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir / "hf/model-00001-of-00005.safetensors"));
}

}  // namespace
}  // namespace mlpo::train
