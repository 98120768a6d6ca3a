#include "core/model_spec.hpp"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "core/hf_config.hpp"

namespace mlpo {

namespace {

// The parameter count (accounting.cpp, in int64) must not overflow: its terms are summed here
// in double, which cannot, and a model over kMaxModelParams is refused naming the fields of
// its largest term.
template <typename Fail>
void check_parameter_count(const ModelSpec& s, const Fail& fail) {
  const double h = static_cast<double>(s.hidden), layers = static_cast<double>(s.layers);
  const double kv_dim = static_cast<double>(s.kv_heads) * static_cast<double>(s.head_dim());
  const std::pair<const char*, double> terms[] = {
      {"vocab x hidden", static_cast<double>(s.vocab) * h * (s.tied_embeddings ? 1 : 2)},
      {"layers x hidden x (hidden + kv_heads x head_dim)", layers * 2 * h * (h + kv_dim)},
      {"layers x hidden x ffn_hidden", layers * 3 * h * static_cast<double>(s.ffn_hidden)},
      {"layers x hidden", layers * 2 * h + h}};
  double total = 0;
  const std::pair<const char*, double>* largest = &terms[0];
  for (const auto& term : terms) {
    total += term.second;
    if (term.second > largest->second) largest = &term;
  }
  if (total > static_cast<double>(kMaxModelParams)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "the model would have %.3g parameters, more than the %.3g MLPO can count", total,
                  static_cast<double>(kMaxModelParams));
    fail(largest->first,
         std::string(text) + " (16 bytes of state each, in 64 bits); make these sizes smaller");
  }
}

}  // namespace

void validate(const ModelSpec& s, const std::string& where) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw Error((where.empty() ? "" : where + ": ") + field + ": " + why);
  };
  const std::pair<const char*, std::int64_t> sizes[] = {
      {"vocab", s.vocab},       {"hidden", s.hidden},         {"layers", s.layers},  {"heads", s.heads},
      {"kv_heads", s.kv_heads}, {"ffn_hidden", s.ffn_hidden}, {"seq_len", s.seq_len}};
  for (const auto& [field, value] : sizes)
    if (value <= 0) fail(field, "must be > 0, got " + std::to_string(value));
  if (s.hidden % s.heads != 0)
    fail("heads", "hidden (" + std::to_string(s.hidden) + ") must be divisible by heads (" +
                      std::to_string(s.heads) + ")");
  if (s.heads % s.kv_heads != 0)
    fail("kv_heads", "heads (" + std::to_string(s.heads) + ") must be divisible by kv_heads (" +
                         std::to_string(s.kv_heads) + ")");
  if (s.head_dim() % 2 != 0)
    fail("heads", "head_dim = hidden/heads must be even for RoPE, got " + std::to_string(s.head_dim()));
  if (!(s.rope_theta > 0)) fail("rope_theta", "must be > 0");
  if (!(s.norm_eps > 0)) fail("norm_eps", "must be > 0");
  check_parameter_count(s, fail);
}

ModelSpec model_from_json(const Json& json, const std::string& where) {
  try {
    JsonObject o(json, "");
    o.expect_schema("mlpo.model/1");
    ModelSpec s;
    s.name = o.string_or("name", "custom");
    const std::int64_t big = std::int64_t{1} << 40;
    s.vocab = o.integer("vocab", 1, big);
    s.hidden = o.integer("hidden", 1, big);
    s.layers = o.integer("layers", 1, 1 << 20);
    s.heads = o.integer("heads", 1, 1 << 20);
    s.kv_heads = o.integer("kv_heads", 1, 1 << 20);
    s.ffn_hidden = o.integer("ffn_hidden", 1, big);
    s.seq_len = o.integer("seq_len", 1, std::int64_t{1} << 24);
    s.rope_theta = o.number_or("rope_theta", 1e-9, 1e12, 10000.0);
    s.norm_eps = o.number_or("norm_eps", 1e-30, 1.0, 1e-5);
    s.tied_embeddings = o.boolean_or("tied_embeddings", false);
    o.finish();
    validate(s, "");
    return s;
  } catch (const Error& e) {
    throw Error(where.empty() ? std::string(e.what()) : where + ": " + e.what());
  }
}

Json to_json(const ModelSpec& s) {
  return Json{{"schema", "mlpo.model/1"}, {"name", s.name},
              {"vocab", s.vocab},         {"hidden", s.hidden},
              {"layers", s.layers},       {"heads", s.heads},
              {"kv_heads", s.kv_heads},   {"ffn_hidden", s.ffn_hidden},
              {"seq_len", s.seq_len},     {"rope_theta", s.rope_theta},
              {"norm_eps", s.norm_eps},   {"tied_embeddings", s.tied_embeddings}};
}

ModelSpec load_model(const std::string& name_or_file) {
  const bool looks_like_path =
      name_or_file.find('/') != std::string::npos || name_or_file.find(".json") != std::string::npos;
  if (!looks_like_path) {
    if (!std::filesystem::exists(name_or_file)) return find_preset(name_or_file);  // throws, listing presets
    for (const auto& p : model_presets())
      if (p.name == name_or_file) return p;
  }
  // A Hugging Face checkpoint directory stands for its config.json.
  const std::string config = (std::filesystem::path(name_or_file) / "config.json").string();
  const std::string path =
      std::filesystem::is_directory(name_or_file) && std::filesystem::exists(config) ? config : name_or_file;
  const Json json = read_json_file(path, "an mlpo.model/1 model spec or a Hugging Face config.json");
  if (is_hf_config(json)) return model_from_hf_config(json, path);
  return model_from_json(json, path);
}

}  // namespace mlpo
