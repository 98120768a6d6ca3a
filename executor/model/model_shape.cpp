#include "executor/model/model_shape.hpp"

#include "core/accounting.hpp"
#include "core/model_spec.hpp"

namespace mlpo::model {

namespace {

// The one field-by-field copy between a spec and a shape, each field cast to the type it
// lands in: narrowing for shape_of, widening (so exact) for spec_of. A spec's name has no
// place in a shape and is left empty.
template <class To, class From>
To with_fields_of(const From& from) {
  To to;
  to.vocab = static_cast<decltype(to.vocab)>(from.vocab);
  to.hidden = static_cast<decltype(to.hidden)>(from.hidden);
  to.layers = static_cast<decltype(to.layers)>(from.layers);
  to.heads = static_cast<decltype(to.heads)>(from.heads);
  to.kv_heads = static_cast<decltype(to.kv_heads)>(from.kv_heads);
  to.ffn_hidden = static_cast<decltype(to.ffn_hidden)>(from.ffn_hidden);
  to.seq_len = static_cast<decltype(to.seq_len)>(from.seq_len);
  to.rope_theta = static_cast<decltype(to.rope_theta)>(from.rope_theta);
  to.norm_eps = static_cast<decltype(to.norm_eps)>(from.norm_eps);
  to.tied_embeddings = from.tied_embeddings;
  return to;
}

// The spec a shape stands for, so that core's rules apply to it.
ModelSpec spec_of(const ModelShape& m) { return with_fields_of<ModelSpec>(m); }

}  // namespace

std::int64_t ModelShape::parameter_count() const { return count_params(spec_of(*this)).total; }

void ModelShape::validate() const { mlpo::validate(spec_of(*this), "model shape"); }

ModelShape shape_of(const ModelSpec& s) { return with_fields_of<ModelShape>(s); }

}  // namespace mlpo::model
