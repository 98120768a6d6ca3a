#include "profiles/internal/compute_probe.hpp"

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "core/accounting.hpp"
#include "core/error.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/model/transformer_model.hpp"
#include "executor/compute/gradient_handover.hpp"

namespace mlpo::profiles {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kProbeLayers = 3;

// The resident weights, with the clock read at every acquire once the backend has finished
// what was enqueued before it.
class TimedWeights final : public model::WeightProvider {
 public:
  TimedWeights(Backend& backend, model::ResidentWeights& inner) : backend_(backend), inner_(inner) {}

  DType storage() const override { return inner_.storage(); }
  std::int64_t device_bytes() const override { return inner_.device_bytes(); }
  void begin_pass(model::WeightPass pass) override {
    stamps_.clear();
    inner_.begin_pass(pass);
  }
  model::PartWeights acquire(model::WeightPart part) override {
    backend_.synchronize();
    stamps_.push_back(Clock::now());
    return inner_.acquire(part);
  }
  void release(model::WeightPart part) override { inner_.release(part); }

  const std::vector<Clock::time_point>& stamps() const { return stamps_; }

 private:
  Backend& backend_;
  model::ResidentWeights& inner_;
  std::vector<Clock::time_point> stamps_;
};

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

ComputeProbeSamples probe_model_compute(Backend& backend, const ComputeProbeOptions& options,
                                        const std::function<void(const std::string&)>& progress) {
  ModelSpec spec = options.model;
  spec.layers = kProbeLayers;
  if (options.seq_len > 0) spec.seq_len = options.seq_len;
  const model::ModelShape shape = model::shape_of(spec);
  const model::ParameterLayout layout(shape);
  model::ResidentWeights resident(backend, layout, DType::bf16);
  resident.init(1);
  TimedWeights timed(backend, resident);
  model::TransformerModel model(backend, shape, {static_cast<int>(options.micro_batch), DType::bf16, false},
                                &timed);
  const comm::ZeroPartition partition(layout.total(), 1, 0);
  compute::GradientHandover grads(backend, layout, partition, nullptr);

  const std::size_t tokens = static_cast<std::size_t>(options.micro_batch * spec.seq_len);
  std::vector<std::int32_t> inputs(tokens), targets(tokens);
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(spec.vocab - 1));
  for (std::size_t i = 0; i < tokens; ++i) {
    inputs[i] = token(rng);
    targets[i] = token(rng);
  }

  const double n = static_cast<double>(tokens);
  const double layer_flops = layer_forward_flops_per_token(spec, spec.seq_len) * n;
  const double head_flops = head_forward_flops_per_token(spec) * n;
  ComputeProbeSamples out;
  for (int rep = -1; rep < options.repetitions; ++rep) {  // rep -1: warm-up
    model.zero_gradients();
    backend.synchronize();
    const auto f0 = Clock::now();
    model.forward(inputs, targets);
    backend.synchronize();
    const auto f1 = Clock::now();
    const std::vector<Clock::time_point> fwd = timed.stamps();  // embedding, layer 0..2, head
    const auto b0 = Clock::now();
    model.backward(1.0f,
                   [&](const model::GradientSegment& seg) { grads.range_final(seg.range, seg.gradient); });
    grads.finish();
    backend.synchronize();
    const auto b1 = Clock::now();
    const std::vector<Clock::time_point>& bwd = timed.stamps();  // head, layer 2, 1, 0
    MLPO_CHECK(fwd.size() == kProbeLayers + 2 && bwd.size() == kProbeLayers + 1, "compute probe: part walk");
    if (rep < 0) continue;

    // Forward: the layers' mean; the head is the rest (embedding + head + loss). Backward: the
    // three layers and the embedding as three recomputed layers (the last one's skipped
    // recompute added back); the head is its own interval. Every part is a sum of intervals,
    // so none comes out negative however noisy the machine.
    const double layer_f = seconds(fwd[1], fwd[kProbeLayers + 1]) / kProbeLayers;
    const double head_f = seconds(f0, f1) - kProbeLayers * layer_f;
    const double layer_b = (seconds(bwd[1], b1) + layer_f) / kProbeLayers;
    const double head_b = seconds(b0, bwd[1]);
    if (layer_f <= 0 || layer_b <= 0 || head_f <= 0 || head_b <= 0)
      throw Error("compute probe: a part took no measurable time (layer forward " + std::to_string(layer_f) +
                  " s, backward " + std::to_string(layer_b) + " s; head " + std::to_string(head_f) + " s, " +
                  std::to_string(head_b) + " s): the model is too small to time, probe a larger one");
    out.layer_forward_gflops.push_back(layer_flops / layer_f / 1e9);
    out.layer_backward_gflops.push_back(3 * layer_flops / layer_b / 1e9);
    out.head_forward_gflops.push_back(head_flops / head_f / 1e9);
    out.head_backward_gflops.push_back(3 * head_flops / head_b / 1e9);
    if (progress) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "  model probe %d/%d: layer forward %.1f ms, backward %.1f ms; head forward %.1f ms, "
                    "backward %.1f ms",
                    rep + 1, options.repetitions, layer_f * 1e3, layer_b * 1e3, head_f * 1e3, head_b * 1e3);
      progress(line);
    }
  }
  return out;
}

}  // namespace mlpo::profiles
