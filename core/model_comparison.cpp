#include "core/model_comparison.hpp"

#include <string>

#include "core/error.hpp"

namespace mlpo {

namespace {

constexpr ModelField kParameterFields[] = {
    ModelField::vocab,    ModelField::hidden,     ModelField::layers,         ModelField::heads,
    ModelField::kv_heads, ModelField::ffn_hidden, ModelField::tied_embeddings};
constexpr ModelField kConstantFields[] = {ModelField::rope_theta, ModelField::norm_eps};

}  // namespace

std::optional<ModelField> first_difference(const ModelSpec& a, const ModelSpec& b, ModelComparison what) {
  for (ModelField f : kParameterFields)
    if (parameter_value(a, f) != parameter_value(b, f)) return f;
  if (what == ModelComparison::parameters) return std::nullopt;
  for (ModelField f : kConstantFields)
    if (constant_value(a, f) != constant_value(b, f)) return f;
  return std::nullopt;
}

const char* field_name(ModelField field) {
  static constexpr const char* kNames[] = {"vocab",           "hidden",     "layers",
                                           "heads",           "kv_heads",   "ffn_hidden",
                                           "tied_embeddings", "rope_theta", "norm_eps"};
  return kNames[static_cast<int>(field)];
}

std::int64_t parameter_value(const ModelSpec& s, ModelField field) {
  MLPO_CHECK(field != ModelField::rope_theta && field != ModelField::norm_eps,
             std::string("not a parameter field: ") + field_name(field));
  if (field == ModelField::tied_embeddings) return s.tied_embeddings ? 1 : 0;
  // The integer fields, in ModelField's order.
  static constexpr std::int64_t ModelSpec::*kIntegers[] = {&ModelSpec::vocab,    &ModelSpec::hidden,
                                                           &ModelSpec::layers,   &ModelSpec::heads,
                                                           &ModelSpec::kv_heads, &ModelSpec::ffn_hidden};
  return s.*kIntegers[static_cast<int>(field)];
}

double constant_value(const ModelSpec& s, ModelField field) {
  MLPO_CHECK(field == ModelField::rope_theta || field == ModelField::norm_eps,
             std::string("not a constant field: ") + field_name(field));
  return field == ModelField::rope_theta ? s.rope_theta : s.norm_eps;
}

}  // namespace mlpo
