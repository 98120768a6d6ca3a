#pragma once
// ParameterLayout: where every weight lives in the one flat parameter buffer. The same layout
// indexes the flat gradient buffer and the offload engine's fp32 master copy, so "element i"
// means the same weight everywhere.
//
// Order (each tensor row-major, shapes as Hugging Face stores them, [out, in] for matrices):
//   model.embed_tokens.weight                       [vocab, hidden]
//   for each layer i:
//     model.layers.{i}.input_layernorm.weight          [hidden]
//     model.layers.{i}.self_attn.q_proj.weight         [hidden, hidden]
//     model.layers.{i}.self_attn.k_proj.weight         [kv_dim, hidden]
//     model.layers.{i}.self_attn.v_proj.weight         [kv_dim, hidden]
//     model.layers.{i}.self_attn.o_proj.weight         [hidden, hidden]
//     model.layers.{i}.post_attention_layernorm.weight [hidden]
//     model.layers.{i}.mlp.gate_proj.weight            [ffn, hidden]
//     model.layers.{i}.mlp.up_proj.weight              [ffn, hidden]
//     model.layers.{i}.mlp.down_proj.weight            [hidden, ffn]
//   model.norm.weight                               [hidden]
//   lm_head.weight                                  [vocab, hidden]  (absent when tied)
// Each layer is one contiguous range, and so is the head (final norm + lm_head), which lets
// backward hand finished gradients over range by range.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "executor/model/model_shape.hpp"

namespace mlpo::model {

struct ParameterEntry {
  std::string name;                 // Hugging Face LLaMA name
  std::int64_t offset = 0;          // first element in the flat buffer
  std::vector<std::int64_t> shape;  // [n] for norm weights, [out, in] for matrices
  bool is_norm = false;             // RMSNorm gain (initialised to 1)

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// Elements [offset, offset + count) of the flat buffer.
struct ParameterRange {
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

struct LayerParameters {
  ParameterEntry attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
};

class ParameterLayout {
 public:
  explicit ParameterLayout(const ModelShape& shape);  // validates the shape

  const std::vector<ParameterEntry>& entries() const { return entries_; }  // in flat order
  std::int64_t total() const { return total_; }

  const ParameterEntry& embedding() const { return entries_.front(); }
  const ParameterEntry& final_norm() const { return final_norm_; }
  const ParameterEntry& lm_head() const { return lm_head_; }  // the embedding when tied
  const LayerParameters& layer(int i) const { return layers_.at(static_cast<std::size_t>(i)); }
  int layers() const { return static_cast<int>(layers_.size()); }
  bool tied() const { return lm_head_.offset == entries_.front().offset; }  // lm_head is the embedding

  ParameterRange embedding_range() const { return {embedding().offset, embedding().numel()}; }
  ParameterRange layer_range(int i) const;
  ParameterRange head_range() const;  // final norm, then lm_head unless tied
  // Every RMSNorm gain (is_norm entries), in flat order: what AdamW leaves undecayed by
  // default (the matrices, embeddings included, are decayed).
  std::vector<ParameterRange> norm_ranges() const;

  // The entry holding flat element `index` (binary search), and the entry named `name`.
  const ParameterEntry& entry_at(std::int64_t index) const;
  const ParameterEntry* find(std::string_view name) const;

 private:
  std::vector<ParameterEntry> entries_;
  std::vector<LayerParameters> layers_;
  ParameterEntry final_norm_, lm_head_;
  std::int64_t total_ = 0;
};

}  // namespace mlpo::model
