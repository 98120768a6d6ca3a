#pragma once
// Hugging Face checkpoint directories made in a test: the tensors of a model's
// ParameterLayout from given fp32 values, each in a chosen dtype, cut into shards and written
// with MLPO's own safetensors writer (plus config.json and, for several shards, the index).
// Tests tamper with the tensor list before writing it to make broken checkpoints.

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/fp16.hpp"
#include "core/hf_config.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/hf/safetensors.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train::test {

struct HfTensor {
  hf::SafetensorsEntry entry;
  std::string data;  // entry.dtype's little-endian bytes
};

struct HfDirectory {
  Json config;
  std::vector<std::vector<HfTensor>> shards;
  bool index = true;  // write model.safetensors.index.json (when several shards)

  HfTensor* find(const std::string& name) {
    for (auto& shard : shards)
      for (auto& t : shard)
        if (t.entry.name == name) return &t;
    return nullptr;
  }

  void write(const std::string& dir) const {
    std::filesystem::create_directories(dir);
    write_file(dir + "/config.json", config.dump(2));
    Json map = Json::object();
    for (std::size_t s = 0; s < shards.size(); ++s) {
      const std::string name = shards.size() == 1 ? "model.safetensors"
                                                  : "model-0000" + std::to_string(s + 1) + "-of-0000" +
                                                        std::to_string(shards.size()) + ".safetensors";
      std::vector<hf::SafetensorsEntry> entries;
      std::string data;
      for (const auto& t : shards[s]) {
        entries.push_back(t.entry);
        data += t.data;
        map[t.entry.name] = name;
      }
      write_file(dir + "/" + name, hf::safetensors_header(entries, {{"format", "pt"}}) + data);
    }
    if (shards.size() > 1 && index)
      write_file(dir + "/model.safetensors.index.json", Json{{"weight_map", map}}.dump());
  }
};

// The value a tensor of `dtype` holds for `v`, back in fp32 (what an import must read).
inline float stored_value(float v, const std::string& dtype) {
  if (dtype == "BF16") return bf16_to_float(float_to_bf16(v));
  if (dtype == "F16") return fp16_to_float(float_to_fp16(v));
  return v;
}

inline std::string encode(std::span<const float> values, const std::string& dtype) {
  std::string out;
  for (float v : values) {
    if (dtype == "F32") {
      out.append(reinterpret_cast<const char*>(&v), 4);
    } else {
      const std::uint16_t h = dtype == "BF16" ? float_to_bf16(v).bits : float_to_fp16(v);
      out.append(reinterpret_cast<const char*>(&h), 2);
    }
  }
  return out;
}

// `values`: layout.total() fp32 values in flat order; tensor e gets dtype_of(e); the tensors
// are cut into `shards` runs of about equal count.
inline HfDirectory make_hf_directory(const ModelSpec& spec, std::span<const float> values,
                                     const std::function<std::string(std::size_t)>& dtype_of,
                                     std::size_t shards) {
  const model::ParameterLayout layout(model::shape_of(spec));
  HfDirectory d{hf_config(spec, "bfloat16"), std::vector<std::vector<HfTensor>>(shards), true};
  const auto& entries = layout.entries();
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::string dtype = dtype_of(e);
    d.shards[e * shards / entries.size()].push_back(
        {{entries[e].name, dtype, entries[e].shape},
         encode(values.subspan(static_cast<std::size_t>(entries[e].offset),
                               static_cast<std::size_t>(entries[e].numel())),
                dtype)});
  }
  return d;
}

// Deterministic values of every sign and a spread of magnitudes.
inline std::vector<float> test_values(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t x = 88172645463325252ull;
  for (auto& f : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    f = (static_cast<float>(x % 2000001) - 1000000.0f) * 1e-6f * static_cast<float>(1 + x % 3);
  }
  return v;
}

}  // namespace mlpo::train::test
