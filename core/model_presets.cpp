// Built-in model presets. Parameter counts are asserted in tests/core/model_spec_test.cpp.
#include <cctype>
#include <string>
#include <vector>

#include "core/did_you_mean.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"

namespace mlpo {

namespace {

ModelSpec make(const char* name, std::int64_t vocab, std::int64_t hidden, std::int64_t layers,
               std::int64_t heads, std::int64_t kv_heads, std::int64_t ffn, std::int64_t seq,
               double rope_theta = 10000.0, double norm_eps = 1e-5, bool tied = false) {
  ModelSpec s;
  s.name = name;
  s.vocab = vocab;
  s.hidden = hidden;
  s.layers = layers;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.ffn_hidden = ffn;
  s.seq_len = seq;
  s.rope_theta = rope_theta;
  s.norm_eps = norm_eps;
  s.tied_embeddings = tied;
  return s;
}

}  // namespace

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> presets = {
      // Small models for tests, CI and the demo (byte-level vocabulary of 256).
      make("tiny", 256, 128, 4, 4, 2, 384, 128),
      make("small", 256, 512, 6, 8, 4, 1408, 256),
      make("1b", 32000, 2048, 22, 32, 4, 5632, 2048),
      // 2,228,380,160 parameters: its fp32 optimizer state (24.9 GiB) exceeds a 24 GiB machine's
      // memory, which scripts/bench-memory-wall.sh trains it on.
      make("2b", 32000, 2560, 30, 20, 4, 6912, 2048),
      // Llama 2 (vocab 32000, untied, RMSNorm eps 1e-5).
      make("llama2-7b", 32000, 4096, 32, 32, 32, 11008, 4096),
      make("llama2-13b", 32000, 5120, 40, 40, 40, 13824, 4096),
      make("llama2-70b", 32000, 8192, 80, 64, 8, 28672, 4096),
      // The published offload study's configurations (vocab 50304, kv_heads 4, seq 2048).
      make("paper-40b", 50304, 5120, 128, 40, 4, 20480, 2048),
      make("paper-52b", 50304, 8192, 64, 64, 4, 21824, 2048),
      make("paper-70b", 50304, 8192, 80, 64, 4, 28672, 2048),
      make("paper-100b", 50304, 8192, 124, 64, 4, 28672, 2048),
      make("paper-120b", 50304, 10240, 96, 80, 4, 28672, 2048),
      // Larger MLPO targets (vocab 50304).
      make("mlpo-175b", 50304, 12288, 96, 96, 96, 32768, 2048),
      make("mlpo-280b", 50304, 16384, 88, 128, 8, 53248, 2048),
  };
  return presets;
}

ModelSpec find_preset(const std::string& name) {
  // Case-insensitive: LLaMA2-70B is llama2-70b (preset names are lower case).
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string known;
  std::vector<std::string> names;
  for (const auto& p : model_presets()) {
    if (p.name == lower) return p;
    known += (known.empty() ? "" : ", ") + p.name;
    names.push_back(p.name);
  }
  throw Error("unknown model preset '" + name + "'" + did_you_mean(name, names) +
              " (known presets: " + known + "; or pass a path to an mlpo.model/1 JSON file)");
}

}  // namespace mlpo
