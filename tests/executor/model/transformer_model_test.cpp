#include "executor/model/transformer_model.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/executor/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

constexpr int kBatch = 2;

struct Harness {
  explicit Harness(const model::ModelShape& shape, DType storage, unsigned threads = 2)
      : pool(threads),
        backend(pool, CpuBackendOptions{2, cpu::GemmPath::blas}),
        model(backend, shape, {kBatch, storage}) {}
  ThreadPool pool;
  CpuBackend backend;
  model::TransformerModel model;
};

double relative_l2(const std::vector<double>& got, const std::vector<double>& want, std::int64_t offset,
                   std::int64_t count) {
  double num = 0, den = 0;
  for (std::int64_t i = offset; i < offset + count; ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

TEST(TransformerModel, LossAtInitIsNearLogVocab) {
  for (bool tied : {false, true}) {
    Harness h(tiny_shape(tied), DType::bf16);
    h.model.init_weights(1);
    const Batch b = random_batch(h.model.shape(), kBatch, 2);
    EXPECT_NEAR(h.model.forward(b.tokens, b.targets), std::log(64.0), 0.05) << "tied=" << tied;
  }
}

// The whole model, in double precision, against central finite differences of its own loss.
// Why f64: the model code is storage-type generic, and only in f64 is the finite difference
// accurate (h = 1e-5, error ~1e-10); in bf16 the rounding of every activation would swamp it.
// This checks everything the op tests cannot: the wiring of the layers, residuals, RoPE on q
// and k, GQA head mapping, the checkpoint recomputation in backward, the loss scaling and (in
// the tied case) the lm_head gradient landing in the embedding.
void check_gradients_against_finite_differences(bool tied) {
  Harness h(tiny_shape(tied), DType::f64);
  const model::ParameterLayout& layout = h.model.layout();
  h.model.load_weights(spread_weights(layout, 11, 10.0f));
  const Batch b = random_batch(h.model.shape(), kBatch, 12);
  h.model.forward(b.tokens, b.targets);
  h.model.backward();
  const std::vector<double> grads = gradients_of(h.model);

  double* w = h.model.weights().as<double>();
  std::mt19937_64 rng(13);
  for (const model::ParameterEntry& e : layout.entries()) {
    std::vector<std::int64_t> picks;
    if (e.numel() <= 64) {
      for (std::int64_t i = 0; i < e.numel(); ++i) picks.push_back(e.offset + i);
    } else if (e.name == "model.embed_tokens.weight") {  // rows of tokens that occur
      for (int j = 0; j < 24; ++j)
        picks.push_back(e.offset + b.tokens[rng() % b.tokens.size()] * e.shape[1] +
                        static_cast<std::int64_t>(rng() % e.shape[1]));
    } else {
      for (int j = 0; j < 64; ++j) picks.push_back(e.offset + static_cast<std::int64_t>(rng() % e.numel()));
    }
    double max_err = 0, max_grad = 0;
    for (std::int64_t i : picks) {
      const double keep = w[i], step = 1e-5;
      w[i] = keep + step;
      const double up = h.model.forward(b.tokens, b.targets);
      w[i] = keep - step;
      const double down = h.model.forward(b.tokens, b.targets);
      w[i] = keep;
      const double numeric = (up - down) / (2 * step);
      max_err = std::max(max_err, std::abs(numeric - grads[i]));
      max_grad = std::max(max_grad, std::abs(grads[i]));
    }
    EXPECT_GT(max_grad, 1e-6) << e.name << ": gradient is zero where it should not be";
    EXPECT_LT(max_err, 1e-6 * max_grad + 1e-10) << e.name << " max |grad| " << max_grad;
  }
}

TEST(TransformerModel, GradientsMatchFiniteDifferencesInDoublePrecision) {
  check_gradients_against_finite_differences(false);
}
TEST(TransformerModel, TiedEmbeddingGradientsMatchFiniteDifferences) {
  check_gradients_against_finite_differences(true);
}

// bf16 storage against the f64 model on the same (bf16-representable) weights: the rounding
// of every stored activation and activation gradient costs a few percent, no more (measured:
// at most 1.5% relative L2 error per tensor on this configuration; the bound is 5%).
TEST(TransformerModel, Bf16GradientsStayCloseToDoublePrecision) {
  const model::ModelShape shape = tiny_shape();
  Harness lo(shape, DType::bf16), hi(shape, DType::f64);
  std::vector<float> w = spread_weights(lo.model.layout(), 21, 5.0f);
  for (float& x : w) x = bf16_to_float(float_to_bf16(x));
  lo.model.load_weights(w);
  hi.model.load_weights(w);
  const Batch b = random_batch(shape, kBatch, 22);
  const double loss_lo = lo.model.forward(b.tokens, b.targets),
               loss_hi = hi.model.forward(b.tokens, b.targets);
  EXPECT_NEAR(loss_lo, loss_hi, 0.02 * loss_hi);
  lo.model.backward();
  hi.model.backward();
  const auto g_lo = gradients_of(lo.model), g_hi = gradients_of(hi.model);
  for (const model::ParameterEntry& e : lo.model.layout().entries()) {
    const double err = relative_l2(g_lo, g_hi, e.offset, e.numel());
    EXPECT_LT(err, 0.05) << e.name;
  }
}

TEST(TransformerModel, RepeatedRunsAreBitwiseIdentical) {
  Harness h(tiny_shape(), DType::bf16);
  h.model.init_weights(31);
  const Batch b = random_batch(h.model.shape(), kBatch, 32);
  const double loss1 = h.model.forward(b.tokens, b.targets);
  h.model.backward();
  const auto g1 = gradients_of(h.model);
  h.model.zero_gradients();
  const double loss2 = h.model.forward(b.tokens, b.targets);
  h.model.backward();
  EXPECT_EQ(loss1, loss2);
  EXPECT_EQ(g1, gradients_of(h.model));
}

TEST(TransformerModel, ResultsAreBitwiseIndependentOfThreadCount) {
  const Batch b = random_batch(tiny_shape(), kBatch, 42);
  std::vector<std::vector<double>> grads;
  std::vector<double> losses;
  for (unsigned threads : {1u, 2u}) {
    Harness h(tiny_shape(), DType::bf16, threads);
    h.model.init_weights(41);
    losses.push_back(h.model.forward(b.tokens, b.targets));
    h.model.backward();
    grads.push_back(gradients_of(h.model));
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(grads[0], grads[1]);
}

TEST(TransformerModel, GradientsAccumulateOverMicroBatches) {
  Harness h(tiny_shape(), DType::f64);
  h.model.load_weights(spread_weights(h.model.layout(), 51, 5.0f));
  const Batch a = random_batch(h.model.shape(), kBatch, 52), c = random_batch(h.model.shape(), kBatch, 53);
  const auto ga = add_gradients(h.model, a, 0.5f);
  h.model.zero_gradients();
  const auto gc = add_gradients(h.model, c, 0.5f);
  h.model.zero_gradients();
  add_gradients(h.model, a, 0.5f);
  const auto sum = add_gradients(h.model, c, 0.5f);
  double max_err = 0, max_g = 0;
  for (std::size_t i = 0; i < sum.size(); ++i) {
    max_err = std::max(max_err, std::abs(sum[i] - (ga[i] + gc[i])));
    max_g = std::max(max_g, std::abs(sum[i]));
  }
  EXPECT_LT(max_err, 1e-12 * max_g);
  EXPECT_GT(max_g, 0.0);
}

TEST(TransformerModel, LossScaleScalesGradients) {
  Harness h(tiny_shape(), DType::f64);
  h.model.load_weights(spread_weights(h.model.layout(), 61, 5.0f));
  const Batch b = random_batch(h.model.shape(), kBatch, 62);
  const auto g1 = add_gradients(h.model, b, 1.0f);
  h.model.zero_gradients();
  const auto g4 = add_gradients(h.model, b, 0.25f);
  for (std::size_t i = 0; i < g1.size(); ++i) ASSERT_NEAR(g4[i] * 4, g1[i], 1e-12 * (1 + std::abs(g1[i])));
}

// Each hook call names a range whose values never change again during this backward, and the
// calls come head, layers last to first, embedding, covering the whole buffer once.
TEST(TransformerModel, HookHandsOverEachRangeOnceAndFinal) {
  for (bool tied : {false, true}) {
    Harness h(tiny_shape(tied), DType::bf16);
    h.model.init_weights(71);
    const Batch b = random_batch(h.model.shape(), kBatch, 72);
    h.model.forward(b.tokens, b.targets);
    std::vector<model::GradientSegment> calls;
    std::vector<std::vector<double>> snapshots;
    h.model.backward(1.0f, [&](const model::GradientSegment& s) {
      calls.push_back(s);
      const auto all = gradients_of(h.model);
      snapshots.emplace_back(all.begin() + s.range.offset, all.begin() + s.range.offset + s.range.count);
    });
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0].part, model::GradientSegment::Part::head);
    EXPECT_EQ(calls[1].part, model::GradientSegment::Part::layer);
    EXPECT_EQ(calls[1].layer, 1);
    EXPECT_EQ(calls[2].layer, 0);
    EXPECT_EQ(calls[3].part, model::GradientSegment::Part::embedding);
    const auto final_grads = gradients_of(h.model);
    std::int64_t covered = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::vector<double> now(final_grads.begin() + calls[i].range.offset,
                                    final_grads.begin() + calls[i].range.offset + calls[i].range.count);
      EXPECT_EQ(snapshots[i], now) << "range " << i << " changed after its hook (tied=" << tied << ")";
      covered += calls[i].range.count;
    }
    EXPECT_EQ(covered, h.model.layout().total());
  }
}

TEST(TransformerModel, RejectsBatchOfWrongLength) {
  Harness h(tiny_shape(), DType::bf16);
  const Batch b = random_batch(h.model.shape(), 1, 81);
  EXPECT_THROW(h.model.forward(b.tokens, b.targets), Error);
}

}  // namespace
}  // namespace mlpo::testing
