#include "executor/model/model_shape.hpp"

#include <string>

#include "core/error.hpp"
#include "core/model_spec.hpp"

namespace mlpo::model {

std::int64_t ModelShape::parameter_count() const {
  const std::int64_t V = vocab, h = hidden, kv = kv_dim(), f = ffn_hidden;
  const std::int64_t per_layer = h * h + 2 * h * kv + h * h + 3 * h * f + 2 * h;
  return V * h * (tied_embeddings ? 1 : 2) + layers * per_layer + h;
}

void ModelShape::validate() const {
  auto positive = [](int value, const char* field) {
    if (value <= 0)
      throw Error(std::string("model shape: ") + field + " must be positive, got " + std::to_string(value));
  };
  positive(vocab, "vocab");
  positive(hidden, "hidden");
  positive(layers, "layers");
  positive(heads, "heads");
  positive(kv_heads, "kv_heads");
  positive(ffn_hidden, "ffn_hidden");
  positive(seq_len, "seq_len");
  if (hidden % heads != 0)
    throw Error("model shape: hidden (" + std::to_string(hidden) + ") must be a multiple of heads (" +
                std::to_string(heads) + ")");
  if (heads % kv_heads != 0)
    throw Error("model shape: heads (" + std::to_string(heads) + ") must be a multiple of kv_heads (" +
                std::to_string(kv_heads) + ")");
  if (head_dim() % 2 != 0)
    throw Error("model shape: head dimension hidden/heads = " + std::to_string(head_dim()) +
                " must be even for RoPE");
  if (!(rope_theta > 0.0f)) throw Error("model shape: rope_theta must be positive");
  if (!(norm_eps > 0.0f)) throw Error("model shape: norm_eps must be positive");
}

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
