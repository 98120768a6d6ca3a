#include "executor/train/internal/rank_weights.hpp"

#include "executor/model/gathered_weights.hpp"

namespace mlpo::train {

RankWeights::RankWeights(Backend& backend, const model::ParameterLayout& layout, std::span<bf16> weights,
                         comm::LayerExchange* exchange, const compute::TrainingFootprint& footprint)
    : weights_(weights) {
  if (exchange) {
    provider_ = std::make_unique<model::GatheredWeights>(backend, layout, *exchange, weights);
  } else if (footprint.param_offload) {
    auto p = std::make_unique<model::HostStreamedWeights>(backend, layout, DType::bf16, weights.data(),
                                                          compute::weight_slots(footprint));
    streamed_ = p.get();
    provider_ = std::move(p);
  } else {
    auto p = std::make_unique<model::ResidentWeights>(backend, layout, DType::bf16);
    resident_ = p.get();
    provider_ = std::move(p);
    uploads_ = backend.make_copy_queue();
  }
}

void RankWeights::upload_all() {
  if (resident_) resident_->upload(weights_.data());
}

void RankWeights::before_update() {
  if (streamed_) streamed_->drop_device_copies();
}

std::function<void(const Subgroup&)> RankWeights::on_subgroup_updated() {
  if (!resident_) return nullptr;
  return [this](const Subgroup& sg) {
    uploads_->to_device(resident_->flat().slice(sg.begin, {sg.elements}), weights_.data() + sg.begin);
  };
}

void RankWeights::after_update() {
  if (!resident_) return;
  uploads_->order_compute_after_copies();
  uploads_->wait();
}

std::optional<WeightFetches> RankWeights::fetches_since_last_call() {
  if (!streamed_) return std::nullopt;
  const WeightFetches since{streamed_->fetched_bytes() - fetched_before_,
                            streamed_->demand_fetches() - demand_before_};
  fetched_before_ = streamed_->fetched_bytes();
  demand_before_ = streamed_->demand_fetches();
  return since;
}

}  // namespace mlpo::train
