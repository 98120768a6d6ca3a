#include "executor/model/parameter_layout.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::model {

ParameterLayout::ParameterLayout(const ModelShape& shape) {
  shape.validate();
  const std::int64_t V = shape.vocab, h = shape.hidden, kv = shape.kv_dim(), f = shape.ffn_hidden;
  auto add = [&](std::string name, std::vector<std::int64_t> dims, bool is_norm = false) {
    ParameterEntry e{std::move(name), total_, std::move(dims), is_norm};
    total_ += e.numel();
    entries_.push_back(e);
    return e;
  };
  add("model.embed_tokens.weight", {V, h});
  for (int i = 0; i < shape.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerParameters l;
    l.attn_norm = add(p + "input_layernorm.weight", {h}, true);
    l.wq = add(p + "self_attn.q_proj.weight", {h, h});
    l.wk = add(p + "self_attn.k_proj.weight", {kv, h});
    l.wv = add(p + "self_attn.v_proj.weight", {kv, h});
    l.wo = add(p + "self_attn.o_proj.weight", {h, h});
    l.mlp_norm = add(p + "post_attention_layernorm.weight", {h}, true);
    l.w_gate = add(p + "mlp.gate_proj.weight", {f, h});
    l.w_up = add(p + "mlp.up_proj.weight", {f, h});
    l.w_down = add(p + "mlp.down_proj.weight", {h, f});
    layers_.push_back(std::move(l));
  }
  final_norm_ = add("model.norm.weight", {h}, true);
  lm_head_ = shape.tied_embeddings ? entries_.front() : add("lm_head.weight", {V, h});
  MLPO_CHECK(total_ == shape.parameter_count(), "layout total differs from the LLaMA parameter formula");
}

ParameterRange ParameterLayout::layer_range(int i) const {
  const LayerParameters& l = layer(i);
  return {l.attn_norm.offset, l.w_down.offset + l.w_down.numel() - l.attn_norm.offset};
}

ParameterRange ParameterLayout::head_range() const {
  return {final_norm_.offset, total_ - final_norm_.offset};
}

std::vector<ParameterRange> ParameterLayout::norm_ranges() const {
  std::vector<ParameterRange> ranges;
  for (const auto& e : entries_)
    if (e.is_norm) ranges.push_back({e.offset, e.numel()});
  return ranges;
}

const ParameterEntry& ParameterLayout::entry_at(std::int64_t index) const {
  MLPO_CHECK(index >= 0 && index < total_, "parameter index out of range");
  auto it = std::upper_bound(entries_.begin(), entries_.end(), index,
                             [](std::int64_t i, const ParameterEntry& e) { return i < e.offset; });
  return *(it - 1);
}

const ParameterEntry* ParameterLayout::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace mlpo::model
