#pragma once
// The model's view (ModelShape) of a ModelSpec: the same numbers, in the types the model uses.

#include "core/model_spec.hpp"
#include "executor/model/model_shape.hpp"

namespace mlpo::train {

inline ModelShape shape_of(const ModelSpec& s) {
  ModelShape m;
  m.vocab = static_cast<int>(s.vocab);
  m.hidden = static_cast<int>(s.hidden);
  m.layers = static_cast<int>(s.layers);
  m.heads = static_cast<int>(s.heads);
  m.kv_heads = static_cast<int>(s.kv_heads);
  m.ffn_hidden = static_cast<int>(s.ffn_hidden);
  m.seq_len = static_cast<int>(s.seq_len);
  m.rope_theta = static_cast<float>(s.rope_theta);
  m.norm_eps = static_cast<float>(s.norm_eps);
  m.tied_embeddings = s.tied_embeddings;
  return m;
}

}  // namespace mlpo::train
