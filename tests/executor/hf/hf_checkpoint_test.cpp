// Import of Hugging Face checkpoint directories (HfCheckpoint): sharded, mixed dtypes, read
// tensor by tensor through a bounded buffer, and every kind of broken checkpoint named by
// its tensor. The training round trip (export -> --init-from) is hf_round_trip_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "executor/hf/hf_checkpoint.hpp"
#include "tests/executor/hf/hf_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::hf {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const char* const kDtypes[3] = {"BF16", "F16", "F32"};

struct Fixture {
  TempDir dir;
  ModelSpec spec = test::tiny_model();
  model::ParameterLayout layout{model::shape_of(spec)};
  std::vector<float> values = test::test_values(layout.total());
  test::HfDirectory hf = test::make_hf_directory(
      spec, values, [](std::size_t e) { return kDtypes[e % 3]; }, 3);
  std::string path = dir / "hf";
};

// What opening `f.hf` (as written) says, or "" when it opens.
std::string open_error(Fixture& f, const ModelSpec& model) {
  f.hf.write(f.path);
  try {
    HfCheckpoint checkpoint(f.path, model);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfCheckpoint, ImportsShardedCheckpointOfBf16Fp16AndFp32Tensors) {
  Fixture f;
  f.hf.write(f.path);
  ASSERT_TRUE(fs::exists(f.path + "/model.safetensors.index.json"));
  HfCheckpoint checkpoint(f.path, f.spec);
  EXPECT_EQ(checkpoint.dtypes(), "BF16, F16, F32");
  // Read in uneven pieces that straddle tensors and shards, as subgroups do.
  std::vector<float> got(f.values.size());
  for (std::int64_t at = 0; at < f.layout.total(); at += 10007)
    checkpoint.read(at, std::min<std::int64_t>(10007, f.layout.total() - at), got.data() + at);
  for (std::size_t e = 0; e < f.layout.entries().size(); ++e) {
    const model::ParameterEntry& entry = f.layout.entries()[e];
    for (std::int64_t i = entry.offset; i < entry.offset + entry.numel(); ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)],
                test::stored_value(f.values[static_cast<std::size_t>(i)], kDtypes[e % 3]))
          << entry.name << " element " << i - entry.offset;
  }
}

TEST(HfCheckpoint, ReadsTensorByTensorThroughABoundedBuffer) {
  Fixture f;
  f.hf.write(f.path);
  const std::size_t staging = 4096;
  HfCheckpoint checkpoint(f.path, f.spec, staging);
  // One layer: exactly its tensors' bytes are read, in reads no larger than the buffer.
  const model::ParameterRange layer = f.layout.layer_range(2);
  std::vector<float> out(static_cast<std::size_t>(layer.count));
  checkpoint.read(layer.offset, layer.count, out.data());
  std::uint64_t layer_bytes = 0;
  for (std::size_t e = 0; e < f.layout.entries().size(); ++e) {
    const model::ParameterEntry& entry = f.layout.entries()[e];
    if (entry.offset >= layer.offset && entry.offset < layer.offset + layer.count)
      layer_bytes +=
          static_cast<std::uint64_t>(entry.numel()) * (kDtypes[e % 3] == std::string("F32") ? 4 : 2);
  }
  EXPECT_EQ(checkpoint.stats().bytes, layer_bytes);
  EXPECT_LE(checkpoint.stats().largest_read, staging);
  EXPECT_GE(checkpoint.stats().reads, layer_bytes / staging);
}

TEST(HfCheckpoint, SingleFileAndTiedEmbeddingsWithoutLmHead) {
  Fixture f;
  f.spec.tied_embeddings = true;
  f.layout = model::ParameterLayout(model::shape_of(f.spec));
  f.values = test::test_values(f.layout.total());
  f.hf = test::make_hf_directory(
      f.spec, f.values, [](std::size_t) { return "BF16"; }, 1);
  EXPECT_EQ(open_error(f, f.spec), "");
  // A tied checkpoint that still carries lm_head.weight (transformers ties it on load): ignored.
  f.hf.shards[0].push_back(f.hf.shards[0].front());
  f.hf.shards[0].back().entry.name = "lm_head.weight";
  EXPECT_EQ(open_error(f, f.spec), "");
}

TEST(HfCheckpoint, MissingTensorIsNamed) {
  Fixture f;
  auto& shard = f.hf.shards[1];
  const std::string name = shard[2].entry.name;
  shard.erase(shard.begin() + 2);
  const std::string e = open_error(f, f.spec);
  EXPECT_NE(e.find("tensor " + name + ": missing"), std::string::npos) << e;
}

TEST(HfCheckpoint, WrongShapeIsNamed) {
  Fixture f;
  auto* t = f.hf.find("model.layers.1.self_attn.k_proj.weight");
  std::swap(t->entry.shape[0], t->entry.shape[1]);  // transposed: same bytes, wrong shape
  const std::string e = open_error(f, f.spec);
  EXPECT_NE(
      e.find("tensor model.layers.1.self_attn.k_proj.weight: shape [128, 64], the model needs [64, 128]"),
      std::string::npos)
      << e;
}

TEST(HfCheckpoint, UnsupportedDtypeIsNamed) {
  Fixture f;
  auto* t = f.hf.find("model.norm.weight");
  t->entry.dtype = "F64";
  t->data += t->data;  // 8 bytes per element if it were F32 doubled
  if (t->data.size() != static_cast<std::size_t>(8 * f.layout.final_norm().numel())) t->data.resize(8 * 128);
  const std::string e = open_error(f, f.spec);
  EXPECT_NE(e.find("tensor model.norm.weight: dtype F64 is not supported"), std::string::npos) << e;
}

TEST(HfCheckpoint, TruncatedShardIsNamed) {
  Fixture f;
  f.hf.write(f.path);
  const std::string last = f.path + "/model-00003-of-00003.safetensors";
  fs::resize_file(last, fs::file_size(last) - 100);
  mlpo::testing::expect_refusal([&] { HfCheckpoint checkpoint(f.path, f.spec); },
                                {"tensor lm_head.weight: data_offsets end at byte", "truncated"},
                                "opened a truncated checkpoint");
}

TEST(HfCheckpoint, IndexThatDoesNotMatchTheShardsIsNamed) {
  Fixture f;
  f.hf.write(f.path);
  Json index = Json::parse(test::read_file(f.path + "/model.safetensors.index.json"));
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00003.safetensors";  // it is in shard 3
  test::write_file(f.path + "/model.safetensors.index.json", index.dump());
  mlpo::testing::expect_refusal([&] { HfCheckpoint checkpoint(f.path, f.spec); },
                                {"weight_map: tensor model.norm.weight -> model-00001-of-00003.safetensors"},
                                "opened a checkpoint with a bad index");
  index["weight_map"]["model.norm.weight"] = "model-00009-of-00009.safetensors";  // no such file
  test::write_file(f.path + "/model.safetensors.index.json", index.dump());
  mlpo::testing::expect_refusal([&] { HfCheckpoint checkpoint(f.path, f.spec); },
                                {"model-00009-of-00009.safetensors: cannot open"},
                                "opened a checkpoint whose index names a missing shard");
}

TEST(HfCheckpoint, UnexpectedTensorIsNamedNotDropped) {
  Fixture f;
  f.hf.shards[0].push_back({{"model.layers.0.self_attn.q_proj.bias", "BF16", {128}}, std::string(256, '\0')});
  const std::string e = open_error(f, f.spec);
  EXPECT_NE(e.find("tensor model.layers.0.self_attn.q_proj.bias: not a weight"), std::string::npos) << e;
}

TEST(HfCheckpoint, ConfigOfAnotherModelThanModelIsNamed) {
  Fixture f;
  ModelSpec other = f.spec;
  other.layers = 2;
  const std::string e = open_error(f, other);
  EXPECT_NE(e.find("config.json: num_hidden_layers 4, but --model tiny has 2"), std::string::npos) << e;
}

}  // namespace
}  // namespace mlpo::hf
