#pragma once
// ModelSpec: the shape of a decoder-only LLaMA-style transformer (RMSNorm, RoPE,
// grouped-query attention, SwiGLU MLP, no biases), as named presets or a JSON file
// ("schema": "mlpo.model/1"). Everything else (accounting, plans, the model itself) is
// derived from these numbers.

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_io.hpp"

namespace mlpo {

struct ModelSpec {
  std::string name;
  std::int64_t vocab = 0;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t seq_len = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  bool tied_embeddings = false;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
};

// The largest model MLPO accepts: its 16 bytes per parameter (fp32 p, m, v and a gradient)
// still count in int64 bytes, and so does every derived parameter count.
inline constexpr std::int64_t kMaxModelParams = INT64_MAX / 16;

// Throws mlpo::Error naming the field when the shape is inconsistent (hidden not divisible by
// heads, heads not divisible by kv_heads, odd head_dim, non-positive sizes) or too large (more
// than kMaxModelParams parameters: the fields of the largest term are named). `where`
// prefixes field names (e.g. the file name).
void validate(const ModelSpec& spec, const std::string& where = "");

// Built-in presets, in the order `--help` lists them.
const std::vector<ModelSpec>& model_presets();

// A preset by name; unknown names are an Error listing the known ones.
ModelSpec find_preset(const std::string& name);

// `name_or_file` is a preset name, a path to an mlpo.model/1 JSON file, a Hugging Face
// config.json (core/hf_config.hpp), or a directory holding one.
ModelSpec load_model(const std::string& name_or_file);

ModelSpec model_from_json(const Json& json, const std::string& where);
Json to_json(const ModelSpec& spec);

}  // namespace mlpo
