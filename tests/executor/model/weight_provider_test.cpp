// Weight providers: the model gets bitwise the same results whether its weights are resident,
// streamed from host memory through a few device slots (parameter offload), or gathered from
// ZeRO-3 shards, and it acquires the parts in the documented order.
#include "executor/model/weight_provider.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "executor/model/gathered_weights.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "tests/executor/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

constexpr int kBatch = 2;

struct Outcome {
  std::vector<double> losses;
  std::vector<std::vector<double>> gradients;
};

// Two steps of forward + backward over two micro-batches each; between the steps the weights
// change (as an update would) through `change`.
Outcome train_two_steps(model::TransformerModel& model, const std::function<void()>& change) {
  Outcome out;
  for (int step = 0; step < 2; ++step) {
    model.zero_gradients();
    for (int micro = 0; micro < 2; ++micro) {
      const Batch b =
          random_batch(model.shape(), kBatch, static_cast<std::uint64_t>(100 + 10 * step + micro));
      out.losses.push_back(model.forward(b.tokens, b.targets));
      model.backward(0.5f);
    }
    out.gradients.push_back(gradients_of(model));
    if (step == 0) change();
  }
  return out;
}

struct TinyModelRig {
  explicit TinyModelRig(bool tied)
      : pool(2),
        backend(pool, CpuBackendOptions{1, cpu::GemmPath::blas}),
        shape(tiny_shape(tied)),
        layout(shape) {
    initial = spread_weights(layout, 7, 3.0f);
    host.resize(initial.size());
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = float_to_bf16(initial[i]);
  }
  // The update between the steps: every weight moves a little.
  void change_host() {
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = float_to_bf16(bf16_to_float(host[i]) * 0.99f + 1e-3f);
  }
  Outcome resident() {
    model::TransformerModel model(backend, shape, {kBatch, DType::bf16});
    std::vector<bf16> copy = host;
    std::memcpy(model.weights().data, copy.data(), copy.size() * sizeof(bf16));
    return train_two_steps(model, [&] {
      change_host();
      std::memcpy(model.weights().data, host.data(), host.size() * sizeof(bf16));
    });
  }
  ThreadPool pool;
  CpuBackend backend;
  model::ModelShape shape;
  model::ParameterLayout layout;
  std::vector<float> initial;
  std::vector<bf16> host;
};

TEST(WeightWalk, ForwardThenBackwardOrderAndTiedHead) {
  const model::ParameterLayout untied(tiny_shape(false)), tied(tiny_shape(true));
  using P = model::WeightPart;
  EXPECT_EQ(model::weight_walk(untied, model::WeightPass::forward),
            (std::vector<P>{P::embedding(), P::transformer_layer(0), P::transformer_layer(1), P::head()}));
  EXPECT_EQ(model::weight_walk(untied, model::WeightPass::backward),
            (std::vector<P>{P::head(), P::transformer_layer(1), P::transformer_layer(0)}));
  ASSERT_EQ(model::part_ranges(untied, P::head()).size(), 1u);
  EXPECT_EQ(model::part_ranges(untied, P::head())[0].offset, untied.final_norm().offset);
  // Tied: the head needs the final norm and the embedding (its lm_head).
  const auto head = model::part_ranges(tied, P::head());
  ASSERT_EQ(head.size(), 2u);
  EXPECT_EQ(head[1].offset, 0);
  EXPECT_EQ(head[1].count, tied.embedding().numel());
  EXPECT_EQ(
      model::largest_part_elements(tied),
      std::max(model::part_elements(tied, P::head()), model::part_elements(tied, P::transformer_layer(0))));
}

TEST(HostStreamedWeights, GivesBitwiseTheResidentResultsWithAnyNumberOfSlots) {
  for (bool tied : {false, true}) {
    TinyModelRig s(tied);
    const Outcome want = s.resident();
    for (int slots : {1, 2, 3}) {
      TinyModelRig t(tied);
      model::HostStreamedWeights streamed(t.backend, t.layout, DType::bf16, t.host.data(), slots);
      model::TransformerModel model(t.backend, t.shape, {kBatch, DType::bf16}, &streamed);
      const Outcome got = train_two_steps(model, [&] {
        streamed.drop_device_copies();
        t.change_host();
      });
      EXPECT_EQ(got.losses, want.losses) << "tied=" << tied << " slots=" << slots;
      EXPECT_TRUE(got.gradients == want.gradients) << "tied=" << tied << " slots=" << slots;
    }
  }
}

// With two slots the next part is always fetched before it is acquired, and backward starts
// with the parts forward left resident (head, last layer).
TEST(HostStreamedWeights, TwoSlotsFetchAheadAndReuseWhatForwardLeft) {
  TinyModelRig s(false);
  model::HostStreamedWeights streamed(s.backend, s.layout, DType::bf16, s.host.data(), 2);
  model::TransformerModel model(s.backend, s.shape, {kBatch, DType::bf16}, &streamed);
  const Batch b = random_batch(s.shape, kBatch, 5);
  model.forward(b.tokens, b.targets);
  EXPECT_EQ(streamed.fetches(), 4);  // embedding, layer 0, layer 1, head
  model.backward();
  EXPECT_EQ(streamed.fetches(), 5);  // + layer 0; head and layer 1 were still resident
  EXPECT_EQ(streamed.demand_fetches(), 0);

  model::HostStreamedWeights one(s.backend, s.layout, DType::bf16, s.host.data(), 1);
  model::TransformerModel single(s.backend, s.shape, {kBatch, DType::bf16}, &one);
  single.forward(b.tokens, b.targets);
  single.backward();
  EXPECT_EQ(one.demand_fetches(), one.fetches());  // one slot: nothing can be fetched ahead
  EXPECT_EQ(one.fetches(), 6);                     // the head stays resident into backward
}

// Streamed gradients (parameter offload of a model larger than the device): each part's
// gradient exists only while its hook runs, and is bitwise the resident model's gradient of
// that range — whatever provider the weights come from.
TEST(StreamedGradients, EachRangeHandedOverIsBitwiseTheResidentGradient) {
  for (bool tied : {false, true}) {
    TinyModelRig s(tied);
    model::TransformerModel resident(s.backend, s.shape, {kBatch, DType::bf16});
    std::memcpy(resident.weights().data, s.host.data(), s.host.size() * sizeof(bf16));
    model::HostStreamedWeights streamed(s.backend, s.layout, DType::bf16, s.host.data(), 2);
    model::TransformerModel model(s.backend, s.shape, {kBatch, DType::bf16, true}, &streamed);
    EXPECT_DEATH(model.gradients(), "no full gradient buffer");
    for (std::uint64_t seed : {3u, 4u}) {  // two micro-batches: nothing carries over between them
      const Batch b = random_batch(s.shape, kBatch, seed);
      resident.zero_gradients();
      EXPECT_EQ(model.forward(b.tokens, b.targets), resident.forward(b.tokens, b.targets));
      resident.backward(0.5f);
      const std::vector<double> want = gradients_of(resident);
      std::int64_t covered = 0;
      model.backward(0.5f, [&](const model::GradientSegment& seg) {
        ASSERT_EQ(seg.gradient.numel(), seg.range.count);
        const float* g = static_cast<const float*>(seg.gradient.data);
        for (std::int64_t i = 0; i < seg.range.count; ++i)
          ASSERT_EQ(static_cast<double>(g[i]), want[static_cast<std::size_t>(seg.range.offset + i)])
              << "tied=" << tied << " range at " << seg.range.offset << " element " << i;
        covered += seg.range.count;
      });
      EXPECT_EQ(covered, s.layout.total());
    }
  }
}

TEST(HostStreamedWeights, RejectsZeroSlots) {
  TinyModelRig s(false);
  EXPECT_THROW(model::HostStreamedWeights(s.backend, s.layout, DType::bf16, s.host.data(), 0), Error);
}

// ZeRO-3 on a world of one: the gather is a copy of the whole shard, and the results are
// the resident ones bit for bit. (Several ranks: tests/executor/train's mpirun tests.)
TEST(GatheredWeights, OnOneRankGivesBitwiseTheResidentResults) {
  for (bool tied : {false, true}) {
    TinyModelRig s(tied);
    const Outcome want = s.resident();
    TinyModelRig t(tied);
    comm::SingleProcessCommunicator comm;
    const comm::ZeroPartition partition(t.layout.total(), 1, 0);
    comm::LayerExchange exchange(comm, partition);
    model::GatheredWeights gathered(t.backend, t.layout, exchange, t.host);
    model::TransformerModel model(t.backend, t.shape, {kBatch, DType::bf16}, &gathered);
    const Outcome got = train_two_steps(model, [&] { t.change_host(); });
    EXPECT_EQ(got.losses, want.losses) << "tied=" << tied;
    EXPECT_TRUE(got.gradients == want.gradients) << "tied=" << tied;
  }
}

}  // namespace
}  // namespace mlpo::testing
