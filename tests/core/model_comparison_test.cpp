// The one comparison of two model specs: the first differing field in the reported order,
// seq_len and name never counted, the constants only when asked for.
#include "core/model_comparison.hpp"

#include <gtest/gtest.h>

#include "core/hf_config.hpp"

namespace mlpo {
namespace {

TEST(ModelComparison, TheFirstDifferingFieldIsReportedInFieldOrder) {
  const ModelSpec a = find_preset("small");
  ModelSpec b = a;
  b.ffn_hidden += 1;
  b.heads *= 2;
  EXPECT_EQ(first_difference(a, b, ModelComparison::parameters), ModelField::heads);
  EXPECT_STREQ(field_name(ModelField::heads), "heads");
  EXPECT_STREQ(hf_field_name(ModelField::heads), "num_attention_heads");
  EXPECT_EQ(parameter_value(b, ModelField::heads), 2 * a.heads);
}

TEST(ModelComparison, SeqLenAndNameNeverCountAndConstantsOnlyWhenAsked) {
  const ModelSpec a = find_preset("small");
  ModelSpec b = a;
  b.seq_len *= 2;
  b.name = "renamed";
  b.norm_eps *= 10;
  EXPECT_EQ(first_difference(a, b, ModelComparison::parameters), std::nullopt);
  EXPECT_EQ(first_difference(a, b, ModelComparison::parameters_and_constants), ModelField::norm_eps);
  EXPECT_STREQ(hf_field_name(ModelField::norm_eps), "rms_norm_eps");
}

TEST(ModelComparison, TiedEmbeddingsCountAsAParameterFieldOfZeroOrOne) {
  const ModelSpec a = find_preset("small");
  ModelSpec b = a;
  b.tied_embeddings = !a.tied_embeddings;
  EXPECT_EQ(first_difference(a, b, ModelComparison::parameters), ModelField::tied_embeddings);
  EXPECT_EQ(parameter_value(b, ModelField::tied_embeddings), b.tied_embeddings ? 1 : 0);
}

}  // namespace
}  // namespace mlpo
