#pragma once
// The `config.json` of a Hugging Face LlamaForCausalLM as a ModelSpec, and back. This is how a
// Hugging Face checkpoint directory names its shape (docs/formats.md, "Hugging Face
// directory"):
//
//   config.json field         ModelSpec field    when absent
//   vocab_size                vocab              (required)
//   hidden_size               hidden             (required)
//   num_hidden_layers         layers             (required)
//   num_attention_heads       heads              (required)
//   num_key_value_heads       kv_heads           num_attention_heads
//   intermediate_size         ffn_hidden         (required)
//   max_position_embeddings   seq_len            2048
//   rope_theta                rope_theta         10000
//   rms_norm_eps              norm_eps           1e-6 (transformers' LlamaConfig default)
//   tie_word_embeddings       tied_embeddings    false
//   _name_or_path             name               "hf-llama"
//
// Every other field is ignored, except those that would make the model one MLPO does not
// compute — model_type other than "llama", hidden_act other than "silu", attention_bias or
// mlp_bias true, a rope_scaling object, a head_dim other than hidden_size /
// num_attention_heads — which are errors naming the field (never silently a different model).

#include <string>

#include "core/json_io.hpp"
#include "core/model_comparison.hpp"
#include "core/model_spec.hpp"

namespace mlpo {

// A Hugging Face config (no MLPO "schema", a "model_type"), as opposed to an mlpo.model/1 file.
bool is_hf_config(const Json& json);

// Throws mlpo::Error "<where>: <field>: <why>" for a missing or invalid field or an
// unsupported architecture (above).
ModelSpec model_from_hf_config(const Json& config, const std::string& where);

// The config.json transformers needs to build the model: architectures ["LlamaForCausalLM"],
// model_type llama, the fields above, hidden_act silu, no biases, and `torch_dtype`
// ("bfloat16", "float16" or "float32": the dtype of the tensors beside it).
Json hf_config(const ModelSpec& spec, const std::string& torch_dtype);

// The config.json name of a compared field (the table above: "vocab_size" ... "rms_norm_eps").
const char* hf_field_name(ModelField field);

}  // namespace mlpo
