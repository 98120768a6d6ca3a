// A Hugging Face config.json as a model spec: every preset survives ModelSpec -> config.json
// -> ModelSpec, a real LLaMA config.json (with the many fields MLPO does not use) parses, and
// what MLPO does not compute is refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/fp16.hpp"
#include "core/hf_config.hpp"
#include "core/model_spec.hpp"

namespace mlpo {
namespace {

// TinyLlama-1.1B-Chat-v1.0's config.json as published (transformers 4.35).
const char* kTinyLlamaConfig = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 5632,
  "max_position_embeddings": 2048,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 22,
  "num_key_value_heads": 4,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.35.0",
  "use_cache": true,
  "vocab_size": 32000
})";

void expect_same(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
}

std::string error_of(const Json& config) {
  try {
    model_from_hf_config(config, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(HfConfig, EveryPresetRoundTripsThroughConfigJson) {
  for (const ModelSpec& p : model_presets()) {
    const Json config = Json::parse(hf_config(p, "bfloat16").dump());  // through the text, as a file holds it
    EXPECT_TRUE(is_hf_config(config));
    EXPECT_EQ(config["architectures"], Json::array({"LlamaForCausalLM"}));
    EXPECT_EQ(config["model_type"], "llama");
    EXPECT_EQ(config["torch_dtype"], "bfloat16");
    expect_same(model_from_hf_config(config, ""), p);
  }
}

TEST(HfConfig, ParsesARealLlamaConfigWithExtraFields) {
  const ModelSpec s = model_from_hf_config(Json::parse(kTinyLlamaConfig), "config.json");
  EXPECT_EQ(s.vocab, 32000);
  EXPECT_EQ(s.hidden, 2048);
  EXPECT_EQ(s.layers, 22);
  EXPECT_EQ(s.heads, 32);
  EXPECT_EQ(s.kv_heads, 4);
  EXPECT_EQ(s.ffn_hidden, 5632);
  EXPECT_EQ(s.seq_len, 2048);
  EXPECT_EQ(s.rope_theta, 10000.0);
  EXPECT_EQ(s.norm_eps, 1e-5);
  EXPECT_FALSE(s.tied_embeddings);
  EXPECT_EQ(s.name, "hf-llama");
}

TEST(HfConfig, AbsentFieldsTakeTransformersDefaults) {
  Json c = Json::parse(kTinyLlamaConfig);
  for (const char* key : {"num_key_value_heads", "rms_norm_eps", "rope_theta", "max_position_embeddings",
                          "tie_word_embeddings"})
    c.erase(key);
  const ModelSpec s = model_from_hf_config(c, "");
  EXPECT_EQ(s.kv_heads, 32);  // = num_attention_heads: multi-head attention
  EXPECT_EQ(s.norm_eps, 1e-6);
  EXPECT_EQ(s.rope_theta, 10000.0);
  EXPECT_EQ(s.seq_len, 2048);
  EXPECT_FALSE(s.tied_embeddings);
}

TEST(HfConfig, RefusesModelsMlpoDoesNotComputeNamingTheField) {
  const Json base = Json::parse(kTinyLlamaConfig);
  auto with = [&](const char* key, const Json& value) {
    Json c = base;
    c[key] = value;
    return error_of(c);
  };
  EXPECT_NE(with("model_type", "mistral").find("model_type"), std::string::npos);
  EXPECT_NE(with("rope_scaling", Json{{"rope_type", "llama3"}, {"factor", 8.0}}).find("rope_scaling"),
            std::string::npos);
  EXPECT_NE(with("attention_bias", true).find("attention_bias"), std::string::npos);
  EXPECT_NE(with("hidden_act", "gelu").find("hidden_act"), std::string::npos);
  EXPECT_NE(with("head_dim", 128).find("head_dim"), std::string::npos);
  Json missing = base;
  missing.erase("hidden_size");
  EXPECT_NE(error_of(missing).find("config.json: hidden_size: missing"), std::string::npos)
      << error_of(missing);
}

TEST(HfConfig, LoadModelTakesAConfigJsonOrItsDirectory) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "mlpo-hfconfig-XXXXXX").string();
  const std::string dir = ::mkdtemp(tmpl.data());
  std::ofstream(dir + "/config.json") << kTinyLlamaConfig;
  EXPECT_EQ(load_model(dir + "/config.json").hidden, 2048);
  EXPECT_EQ(load_model(dir).layers, 22);
  std::filesystem::remove_all(dir);
}

TEST(Fp16, ConvertsExactlyAndRoundsToNearestEven) {
  EXPECT_EQ(fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_float(0x0001), 5.9604644775390625e-8f);  // smallest subnormal, 2^-24
  EXPECT_EQ(fp16_to_float(0x03ff), 6.097555160522461e-5f);   // largest subnormal
  EXPECT_TRUE(std::isinf(fp16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7e00)));
  // Every finite fp16 survives fp16 -> fp32 -> fp16.
  for (std::uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00) {
      ASSERT_EQ(float_to_fp16(fp16_to_float(static_cast<std::uint16_t>(h))), h) << h;
    }
  EXPECT_EQ(float_to_fp16(1.0f + 1.0f / 2048), 0x3c00);       // tie between 1 and 1+2^-10: even (1)
  EXPECT_EQ(float_to_fp16(1.0f + 3.0f / 2048), 0x3c02);       // tie: even (1+2^-9)
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);                 // overflows to infinity
  EXPECT_EQ(float_to_fp16(2.98023223876953125e-8f), 0x0000);  // 2^-25: tie between 0 and 2^-24, even
}

}  // namespace
}  // namespace mlpo
