#pragma once
// Whether two ModelSpecs describe the same model: the one comparison of their fields. A run
// that resumes a checkpoint or imports a Hugging Face directory checks its --model against the
// model found there with it, and names the first field that differs in its own words (the
// field's ModelSpec name, or its config.json name: core/hf_config.hpp).

#include <cstdint>
#include <optional>

#include "core/model_spec.hpp"

namespace mlpo {

// The fields compared, in the order a mismatch is reported: those that fix the parameters
// (vocab .. tied_embeddings), then the constants of the forward pass. seq_len and name never
// count (a run may change its sequence length).
enum class ModelField {
  vocab,
  hidden,
  layers,
  heads,
  kv_heads,
  ffn_hidden,
  tied_embeddings,
  rope_theta,
  norm_eps
};

// What a comparison covers: the parameters' fields, or the constants' too.
enum class ModelComparison { parameters, parameters_and_constants };

// The first field, in ModelField's order, on which `a` and `b` differ; nullopt when they agree
// on every field `what` covers.
std::optional<ModelField> first_difference(const ModelSpec& a, const ModelSpec& b, ModelComparison what);

// A field's name in ModelSpec and in mlpo.model/1 ("vocab" ... "norm_eps").
const char* field_name(ModelField field);

// A parameter field's value (tied_embeddings as 0 or 1), and a constant's (rope_theta,
// norm_eps). Asking one for the other kind of field is a bug (MLPO_CHECK).
std::int64_t parameter_value(const ModelSpec& spec, ModelField field);
double constant_value(const ModelSpec& spec, ModelField field);

}  // namespace mlpo
