#include "core/model_spec.hpp"

#include <gtest/gtest.h>

#include <set>

#include "core/accounting.hpp"
#include "core/error.hpp"

namespace mlpo {

struct PresetCount {
  const char* name;
  std::int64_t params;
};

void PrintTo(const PresetCount& p, std::ostream* os) { *os << p.name; }

class PresetParams : public ::testing::TestWithParam<PresetCount> {};

TEST_P(PresetParams, MatchPublishedCount) {
  EXPECT_EQ(count_params(find_preset(GetParam().name)).total, GetParam().params) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    AllNamedSizes, PresetParams,
    ::testing::Values(PresetCount{"llama2-7b", 6738415616}, PresetCount{"llama2-13b", 13015864320},
                      PresetCount{"llama2-70b", 68976648192}, PresetCount{"paper-40b", 48163722240},
                      PresetCount{"paper-52b", 44278226944}, PresetCount{"paper-70b", 68605452288},
                      PresetCount{"paper-100b", 105885147136}, PresetCount{"paper-120b", 106728663040},
                      PresetCount{"mlpo-175b", 175184818176}, PresetCount{"mlpo-280b", 282166312960},
                      PresetCount{"1b", 1100048384}, PresetCount{"2b", 2228380160},
                      PresetCount{"tiny", 853120}, PresetCount{"small", 17963520}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

TEST(ModelPresets, AllValidateAndAreUnique) {
  std::set<std::string> names;
  for (const auto& p : model_presets()) {
    EXPECT_NO_THROW(validate(p)) << p.name;
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
  }
}

TEST(ModelPresets, UnknownPresetListsKnownOnes) {
  try {
    find_preset("llama9-1t");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("llama9-1t"), std::string::npos);
    EXPECT_NE(m.find("llama2-70b"), std::string::npos);
  }
}

TEST(ModelSpecJson, RoundTripsEveryPreset) {
  for (const auto& p : model_presets()) {
    ModelSpec back = model_from_json(to_json(p), "");
    EXPECT_EQ(to_json(back), to_json(p));
    EXPECT_EQ(count_params(back).total, count_params(p).total);
  }
}

TEST(ModelSpecJson, InconsistentShapeNamesField) {
  Json j = to_json(find_preset("tiny"));
  j["kv_heads"] = 3;
  try {
    model_from_json(j, "m.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: kv_heads"), std::string::npos) << e.what();
  }
}

TEST(ModelSpec, TiedEmbeddingsCountTheMatrixOnce) {
  ModelSpec s = find_preset("tiny");
  std::int64_t untied = count_params(s).total;
  s.tied_embeddings = true;
  EXPECT_EQ(count_params(s).total, untied - s.vocab * s.hidden);
}

TEST(Accounting, ShardsStateOverRanksUnderZero3) {
  ClusterShape shape;
  shape.nodes = 8;
  shape.ranks_per_node = 4;
  Accounting a = account(find_preset("mlpo-280b"), shape);
  EXPECT_EQ(a.params_per_rank, (282166312960 + 31) / 32);
  EXPECT_EQ(a.optimizer_bytes, 282166312960LL * 12);
  EXPECT_EQ(a.optimizer_bytes_per_rank, a.params_per_rank * 12);
  EXPECT_EQ(a.fp32_grad_bytes_per_rank, a.params_per_rank * 4);
  EXPECT_EQ(a.shape.seq_len, 2048);
  EXPECT_EQ(a.tokens_per_iteration, 32 * 2048);
}

TEST(Accounting, FlopsPerTokenIsSixNPlusAttention) {
  ModelSpec s = find_preset("llama2-7b");
  Accounting a = account(s, ClusterShape{});
  double n_matmul = static_cast<double>(count_params(s).total - s.vocab * s.hidden);
  double attn = 12.0 * 4096 * 4096 * 32;
  EXPECT_DOUBLE_EQ(a.model_flops_per_token, 6 * n_matmul + attn);
  EXPECT_GT(a.hardware_flops_per_token, a.model_flops_per_token);
}

TEST(Accounting, RejectsNonPositiveShape) {
  ClusterShape shape;
  shape.micro_batch = 0;
  EXPECT_THROW(account(find_preset("tiny"), shape), Error);
}

// Counts that would overflow int64 (hidden 1048576 x 1M layers printed a negative parameter
// count) are refused naming the fields of the largest term; the largest preset passes.
TEST(ModelSpecValidate, ParameterCountBeyondInt64IsRefusedNamingTheFields) {
  ModelSpec s = find_preset("llama2-7b");
  s.hidden = 1 << 20;
  s.heads = 1024;
  s.kv_heads = 1024;
  s.layers = 1 << 20;
  s.ffn_hidden = 4 << 20;
  try {
    validate(s, "huge.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("huge.json: layers x hidden x ffn_hidden: the model would have"),
              std::string::npos)
        << e.what();
  }
  s = find_preset("llama2-7b");
  s.vocab = std::int64_t{1} << 40;
  s.hidden = std::int64_t{1} << 20;
  s.heads = 1024;
  s.kv_heads = 1024;
  EXPECT_THROW(validate(s), Error);
  EXPECT_NO_THROW(validate(find_preset("mlpo-280b")));
}

TEST(Accounting, ShapeWhoseTokenCountOverflowsIsRefusedNamingTheFlags) {
  ClusterShape shape;
  shape.nodes = shape.ranks_per_node = shape.micro_batch = shape.seq_len = shape.grad_accum = 1 << 20;
  try {
    account(find_preset("tiny"), shape);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("--nodes x --gpus-per-node x --micro-batch x --seq-len x --grad-accum"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace mlpo
