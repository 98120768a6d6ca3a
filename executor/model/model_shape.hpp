#pragma once
// ModelShape: the numbers that fix a LLaMA-style decoder's tensors, in the types the model
// uses (int sizes, float constants). It is the model's view of core's ModelSpec: shape_of()
// below is the one conversion, and core owns the rules — validate() and parameter_count()
// delegate to core's validate() and count_params(), so the model and the accounting can never
// disagree on what a valid shape is or how many parameters it has.

#include <cstdint>

namespace mlpo {
struct ModelSpec;
}  // namespace mlpo

namespace mlpo::model {

struct ModelShape {
  int vocab = 0;
  int hidden = 0;
  int layers = 0;
  int heads = 0;       // query heads
  int kv_heads = 0;    // key/value heads (grouped-query attention when < heads)
  int ffn_hidden = 0;  // SwiGLU inner width
  int seq_len = 0;
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  bool tied_embeddings = false;  // lm_head shares model.embed_tokens.weight

  int head_dim() const { return hidden / heads; }
  int kv_dim() const { return kv_heads * head_dim(); }

  // The standard LLaMA count (core's count_params): V*h (+ V*h for an untied lm_head)
  //   + layers * (h*h [q] + 2*h*kv_dim [k, v] + h*h [o] + 3*h*ffn [gate, up, down] + 2*h [norms]) + h.
  std::int64_t parameter_count() const;

  // Throws mlpo::Error naming the field when the shape cannot describe a model (core's
  // validate() with "model shape" as the place: non-positive sizes, hidden not divisible by
  // heads, heads not divisible by kv_heads, odd head_dim, too many parameters).
  void validate() const;
};

// The model's view of a spec: the same numbers, narrowed to the model's types. The spec is
// validated by core already (load_model, model_from_json, the presets).
ModelShape shape_of(const ModelSpec& spec);

}  // namespace mlpo::model
