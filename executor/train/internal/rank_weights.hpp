#pragma once
// RankWeights: how the model reads this rank's bf16 weights, and how they reach the compute
// device again after each update phase has rewritten them in host memory. It picks the
// weight provider (executor/model/weight_provider.hpp; docs/training.md, "Weights"):
//
//   ZeRO-3 (several ranks)  GatheredWeights: each part all-gathered from the ranks' shards
//                           through the LayerExchange, in every pass; no rank holds them all,
//                           and nothing is left to do after an update
//   --param-offload         HostStreamedWeights: the weights stay in host memory, a few parts
//                           on the device at a time; their device copies are dropped before
//                           the update rewrites the host weights they came from
//   otherwise               ResidentWeights: all weights in one device buffer; each subgroup
//                           goes up on a copy queue as soon as the update has written it, while
//                           the CPU updates the next, and after the update the loop waits only
//                           for the uploads' tail
//
// `weights` is the rank's bf16 host weights (Backend::allocate_host memory, pinned on a GPU):
// the buffer the update phase writes. It, `exchange` and `backend` must outlive this object.

#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "core/bf16.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/model/weight_provider.hpp"
#include "core/subgroup_layout.hpp"
#include "executor/compute/compute_backend.hpp"
#include "executor/train/internal/step_record.hpp"
#include "kernels/backend.hpp"

namespace mlpo::train {

class RankWeights {
 public:
  // `exchange`: the job's layer exchange with several ranks (ZeRO-3), null on one process.
  // `footprint`: --param-offload and the streaming provider's slots.
  RankWeights(Backend& backend, const model::ParameterLayout& layout, std::span<bf16> weights,
              comm::LayerExchange* exchange, const compute::TrainingFootprint& footprint);

  // What the model takes its weights from.
  model::WeightProvider* provider() const { return provider_.get(); }

  // Resident weights: all of the host weights to the device (synchronous), after they are
  // first loaded. The other providers read the host weights themselves.
  void upload_all();

  // Before the update phase rewrites the host weights: streamed weights drop their device
  // copies (waiting for fetches in flight).
  void before_update();

  // For the update phase, called as each subgroup's new bf16 weights are written: resident
  // weights enqueue that subgroup's upload. Null for the other providers.
  std::function<void(const Subgroup&)> on_subgroup_updated();

  // After the update phase: resident weights wait for the uploads' tail and order the
  // following device ops after them (the next update may rewrite the host weights).
  void after_update();

  // Streamed weights: bytes fetched to the device and demand fetches since the previous call
  // (since construction, the first time). None for the other providers.
  std::optional<WeightFetches> fetches_since_last_call();

 private:
  std::span<bf16> weights_;
  std::unique_ptr<model::WeightProvider> provider_;
  model::ResidentWeights* resident_ = nullptr;
  model::HostStreamedWeights* streamed_ = nullptr;
  std::unique_ptr<CopyQueue> uploads_;  // resident only; destroyed before the provider it copies into
  std::int64_t fetched_before_ = 0, demand_before_ = 0;
};

}  // namespace mlpo::train
