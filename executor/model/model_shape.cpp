#include "executor/model/model_shape.hpp"

#include "core/accounting.hpp"
#include "core/model_spec.hpp"

namespace mlpo::model {

namespace {

// The spec a shape stands for, so that core's rules apply to it; widening, so exact.
ModelSpec spec_of(const ModelShape& m) {
  ModelSpec s;
  s.vocab = m.vocab;
  s.hidden = m.hidden;
  s.layers = m.layers;
  s.heads = m.heads;
  s.kv_heads = m.kv_heads;
  s.ffn_hidden = m.ffn_hidden;
  s.seq_len = m.seq_len;
  s.rope_theta = m.rope_theta;
  s.norm_eps = m.norm_eps;
  s.tied_embeddings = m.tied_embeddings;
  return s;
}

}  // namespace

std::int64_t ModelShape::parameter_count() const { return count_params(spec_of(*this)).total; }

void ModelShape::validate() const { mlpo::validate(spec_of(*this), "model shape"); }

ModelShape shape_of(const ModelSpec& s) {
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

}  // namespace mlpo::model
