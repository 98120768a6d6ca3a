#include "core/hf_config.hpp"

#include "core/error.hpp"

namespace mlpo {

bool is_hf_config(const Json& json) {
  return json.is_object() && !json.contains("schema") && json.contains("model_type");
}

namespace {

// A field that must be absent, null or equal to `allowed` (the only value MLPO computes).
void expect_if_present(const Json& config, const char* key, const Json& allowed, const std::string& why) {
  if (!config.contains(key) || config[key].is_null() || config[key] == allowed) return;
  throw Error(std::string(key) + ": " + config[key].dump() + " is not supported (" + why + ")");
}

}  // namespace

ModelSpec model_from_hf_config(const Json& config, const std::string& where) {
  try {
    if (!config.is_object()) throw Error("not a JSON object");
    JsonObject o(config, "");
    const std::string type = o.string_or("model_type", "");
    if (type != "llama")
      o.fail("model_type",
             "is '" + type + "'; MLPO imports LLaMA checkpoints (model_type \"llama\", LlamaForCausalLM)");
    expect_if_present(config, "hidden_act", "silu", "MLPO's MLP is SwiGLU with SiLU");
    expect_if_present(config, "attention_bias", false, "MLPO's projections have no biases");
    expect_if_present(config, "mlp_bias", false, "MLPO's projections have no biases");
    if (config.contains("rope_scaling") && !config["rope_scaling"].is_null())
      o.fail("rope_scaling", "is set; MLPO computes plain RoPE (rope_theta only), not scaled variants");
    ModelSpec s;
    const std::int64_t big = std::int64_t{1} << 40;
    s.name = config.contains("_name_or_path") && config["_name_or_path"].is_string() &&
                     !config["_name_or_path"].get<std::string>().empty()
                 ? config["_name_or_path"].get<std::string>()
                 : "hf-llama";
    s.vocab = o.integer("vocab_size", 1, big);
    s.hidden = o.integer("hidden_size", 1, big);
    s.layers = o.integer("num_hidden_layers", 1, 1 << 20);
    s.heads = o.integer("num_attention_heads", 1, 1 << 20);
    s.kv_heads = o.has("num_key_value_heads") && !config["num_key_value_heads"].is_null()
                     ? o.integer("num_key_value_heads", 1, 1 << 20)
                     : s.heads;
    s.ffn_hidden = o.integer("intermediate_size", 1, big);
    s.seq_len = o.integer_or("max_position_embeddings", 1, std::int64_t{1} << 24, 2048);
    s.rope_theta = o.number_or("rope_theta", 1e-9, 1e12, 10000.0);
    s.norm_eps = o.number_or("rms_norm_eps", 1e-30, 1.0, 1e-6);
    s.tied_embeddings = o.boolean_or("tie_word_embeddings", false);
    if (o.has("head_dim") && !config["head_dim"].is_null() && s.hidden % s.heads == 0 &&
        o.integer("head_dim", 1, 1 << 20) != s.hidden / s.heads)
      o.fail("head_dim", "must be hidden_size / num_attention_heads (" + std::to_string(s.hidden / s.heads) +
                             ") for MLPO");
    validate(s, "");
    return s;
  } catch (const Error& e) {
    throw Error(where.empty() ? std::string(e.what()) : where + ": " + e.what());
  }
}

Json hf_config(const ModelSpec& s, const std::string& torch_dtype) {
  return Json{{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"_name_or_path", s.name},
              {"vocab_size", s.vocab},
              {"hidden_size", s.hidden},
              {"num_hidden_layers", s.layers},
              {"num_attention_heads", s.heads},
              {"num_key_value_heads", s.kv_heads},
              {"head_dim", s.head_dim()},
              {"intermediate_size", s.ffn_hidden},
              {"max_position_embeddings", s.seq_len},
              {"rope_theta", s.rope_theta},
              {"rope_scaling", nullptr},
              {"rms_norm_eps", s.norm_eps},
              {"tie_word_embeddings", s.tied_embeddings},
              {"hidden_act", "silu"},
              {"attention_bias", false},
              {"mlp_bias", false},
              {"torch_dtype", torch_dtype}};
}

const char* hf_field_name(ModelField field) {
  static constexpr const char* kNames[] = {"vocab_size",          "hidden_size",         "num_hidden_layers",
                                           "num_attention_heads", "num_key_value_heads", "intermediate_size",
                                           "tie_word_embeddings", "rope_theta",          "rms_norm_eps"};
  return kNames[static_cast<int>(field)];
}

}  // namespace mlpo
