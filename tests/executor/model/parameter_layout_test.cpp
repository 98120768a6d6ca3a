#include "executor/model/parameter_layout.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "executor/model/parameter_init.hpp"
#include "tests/executor/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

TEST(ParameterLayout, Llama2SevenBShapeHasItsPublishedParameterCount) {
  model::ModelShape s{32000, 4096, 32, 32, 32, 11008, 4096};
  EXPECT_EQ(s.parameter_count(), 6738415616);
  EXPECT_EQ(model::ParameterLayout(s).total(), 6738415616);
}

TEST(ParameterLayout, TotalMatchesFormulaForTiedAndGroupedQueryShapes) {
  for (bool tied : {false, true}) {
    const model::ModelShape s = tiny_shape(tied);
    const std::int64_t V = 64, h = 32, kv = 16, f = 64;
    const std::int64_t expected =
        V * h * (tied ? 1 : 2) + 2 * (h * h + 2 * h * kv + h * h + 3 * h * f + 2 * h) + h;
    EXPECT_EQ(model::ParameterLayout(s).total(), expected);
    EXPECT_EQ(s.parameter_count(), expected);
  }
}

TEST(ParameterLayout, UsesHuggingFaceNamesShapesAndDocumentedOrder) {
  const model::ParameterLayout layout(tiny_shape());
  const std::vector<std::string> expected = {
      "model.embed_tokens.weight",
      "model.layers.0.input_layernorm.weight",
      "model.layers.0.self_attn.q_proj.weight",
      "model.layers.0.self_attn.k_proj.weight",
      "model.layers.0.self_attn.v_proj.weight",
      "model.layers.0.self_attn.o_proj.weight",
      "model.layers.0.post_attention_layernorm.weight",
      "model.layers.0.mlp.gate_proj.weight",
      "model.layers.0.mlp.up_proj.weight",
      "model.layers.0.mlp.down_proj.weight",
  };
  ASSERT_EQ(layout.entries().size(), 1 + 2 * 9 + 2u);
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(layout.entries()[i].name, expected[i]);
  EXPECT_EQ(layout.entries()[layout.entries().size() - 2].name, "model.norm.weight");
  EXPECT_EQ(layout.entries().back().name, "lm_head.weight");
  EXPECT_EQ(layout.find("model.layers.1.self_attn.k_proj.weight")->shape,
            (std::vector<std::int64_t>{16, 32}));
  EXPECT_EQ(layout.find("model.layers.1.mlp.down_proj.weight")->shape, (std::vector<std::int64_t>{32, 64}));
  std::int64_t next = 0;  // entries tile the buffer with no gap
  for (const auto& e : layout.entries()) {
    EXPECT_EQ(e.offset, next) << e.name;
    next += e.numel();
  }
  EXPECT_EQ(next, layout.total());
}

TEST(ParameterLayout, TiedHeadIsTheEmbeddingAndHasNoOwnEntry) {
  const model::ParameterLayout layout(tiny_shape(true));
  EXPECT_EQ(layout.find("lm_head.weight"), nullptr);
  EXPECT_EQ(layout.lm_head().offset, layout.embedding().offset);
  EXPECT_EQ(layout.head_range().count, 32);  // just the final norm
}

TEST(ParameterLayout, LayerHeadAndEmbeddingRangesPartitionTheBuffer) {
  const model::ParameterLayout layout(tiny_shape());
  std::int64_t covered = layout.embedding_range().count + layout.head_range().count;
  EXPECT_EQ(layout.layer_range(0).offset, layout.embedding_range().count);
  for (int l = 0; l < 2; ++l) {
    covered += layout.layer_range(l).count;
    if (l > 0) {
      EXPECT_EQ(layout.layer_range(l).offset,
                layout.layer_range(l - 1).offset + layout.layer_range(l - 1).count);
    }
  }
  EXPECT_EQ(layout.head_range().offset, layout.layer_range(1).offset + layout.layer_range(1).count);
  EXPECT_EQ(covered, layout.total());
}

TEST(ModelShape, RejectsHeadsNotDividingHidden) {
  model::ModelShape s = tiny_shape();
  s.heads = 5;
  EXPECT_THROW(s.validate(), Error);
  s = tiny_shape();
  s.kv_heads = 3;
  EXPECT_THROW(model::ParameterLayout{s}, Error);
}

TEST(ParameterInit, IsAPureFunctionOfSeedAndIndex) {
  const model::ParameterLayout layout(tiny_shape());
  std::vector<float> all(static_cast<std::size_t>(layout.total())), part(1000), again(all.size()),
      other(all.size());
  model::initial_values(layout, 7, 0, all);
  model::initial_values(layout, 7, 2000, part);  // any slice, computed alone, matches
  model::initial_values(layout, 7, 0, again);
  model::initial_values(layout, 8, 0, other);
  EXPECT_EQ(all, again);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 2000));
  EXPECT_NE(all, other);
}

TEST(ParameterInit, OnAThreadPoolIsBitwiseTheSerialValues) {
  const model::ParameterLayout layout(tiny_shape());
  std::vector<float> serial(static_cast<std::size_t>(layout.total())), parallel(serial.size(), -1.0f),
      slice(5000, -1.0f);
  model::initial_values(layout, 11, 0, serial);
  ThreadPool threads(3);
  model::initial_values(layout, 11, 0, parallel, threads);
  model::initial_values(layout, 11, 777, slice, threads);  // a slice that starts off a range boundary
  EXPECT_EQ(parallel, serial);
  EXPECT_TRUE(std::equal(slice.begin(), slice.end(), serial.begin() + 777));
}

TEST(ParameterInit, NormsAreOneAndMatricesHaveStd002) {
  const model::ParameterLayout layout(tiny_shape());
  std::vector<float> w(static_cast<std::size_t>(layout.total()));
  model::initial_values(layout, 3, 0, w);
  double sum = 0, sumsq = 0;
  std::int64_t n = 0;
  for (const auto& e : layout.entries())
    for (std::int64_t i = e.offset; i < e.offset + e.numel(); ++i) {
      if (e.is_norm) {
        EXPECT_EQ(w[static_cast<std::size_t>(i)], 1.0f) << e.name;
      } else {
        sum += w[static_cast<std::size_t>(i)];
        sumsq += double(w[static_cast<std::size_t>(i)]) * w[static_cast<std::size_t>(i)];
        ++n;
      }
    }
  EXPECT_NEAR(sum / n, 0.0, 0.001);
  EXPECT_NEAR(std::sqrt(sumsq / n), 0.02, 0.0005);
}

}  // namespace
}  // namespace mlpo::testing
