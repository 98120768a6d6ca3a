#pragma once
// Safetensors (the Hugging Face tensor file format) for the model's weights:
//
//   [8 bytes: N, little-endian uint64][N bytes: JSON header, space-padded to a multiple of 8]
//   [tensor data, back to back, in header order]
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end)} (offsets
// relative to the data section) plus "__metadata__" (string -> string). We write the weights
// in ParameterLayout order under their Hugging Face LLaMA names (`model.embed_tokens.weight`,
// `model.layers.{i}.self_attn.q_proj.weight`, ..., `model.norm.weight`, `lm_head.weight`),
// dtype BF16, so the file loads with transformers' LlamaForCausalLM. The bytes are a pure
// function of (layout, weights, metadata): keys are sorted, so equal weights give equal files.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "executor/model/parameter_layout.hpp"

namespace mlpo::hf {

// One tensor of a file being written: its data follows the previous tensor's.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // a safetensors dtype: "BF16", "F16", "F32", ... (MLPO imports those three)
  std::vector<std::int64_t> shape;
};

// Bytes per element of a safetensors dtype ("BF16": 2, "F32": 4, "I8": 1, ...); 0 for a name
// safetensors does not define.
std::size_t safetensors_dtype_bytes(const std::string& dtype);

// The bytes before the tensor data of a file holding `tensors` back to back in this order
// (data_offsets follow from the order, the shapes and the dtypes).
std::string safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                               const std::map<std::string, std::string>& metadata);

// The bytes before the tensor data: 8-byte header length + JSON header (padded). The data
// that follows is the layout().total() bf16 weights in layout order, back to back, so a
// file can be streamed: header, then the flat weights in pieces.
std::string safetensors_header(const model::ParameterLayout& layout,
                               const std::map<std::string, std::string>& metadata);

// The whole file's bytes for `weights` (layout().total() bf16 values in layout order).
std::string safetensors_bytes(const model::ParameterLayout& layout, std::span<const bf16> weights,
                              const std::map<std::string, std::string>& metadata);

struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets in the file
  std::uint64_t end = 0;
};

// Parses a safetensors file's header. Throws mlpo::Error naming `path` when the file is
// missing, truncated or not safetensors.
std::vector<SafetensorsTensor> read_safetensors_header(
    const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace mlpo::hf
