#include "executor/compute/gradient_handover.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo::compute {

namespace {

std::int64_t largest_gradient_range(const model::ParameterLayout& layout) {
  std::int64_t n = std::max(layout.embedding_range().count, layout.head_range().count);
  for (int l = 0; l < layout.layers(); ++l) n = std::max(n, layout.layer_range(l).count);
  return n;
}

}  // namespace

std::int64_t GradientHandover::device_bytes(const model::ParameterLayout& layout, int ranks) {
  return ranks == 1 ? 2 * largest_gradient_range(layout) * static_cast<std::int64_t>(sizeof(bf16)) : 0;
}

GradientHandover::GradientHandover(Backend& backend, const model::ParameterLayout& layout,
                                   const comm::ZeroPartition& partition, comm::LayerExchange* exchange)
    : backend_(backend),
      partition_(partition),
      exchange_(exchange),
      grads16_owner_(
          backend.allocate_host(static_cast<std::size_t>(partition.mine().elements) * sizeof(bf16))),
      grads16_(static_cast<bf16*>(grads16_owner_.data()),
               static_cast<std::size_t>(partition.mine().elements)) {
  MLPO_CHECK(partition.total() == layout.total(), "gradient partition of another model");
  MLPO_CHECK((exchange == nullptr) == (partition.ranks() == 1),
             "a LayerExchange is needed exactly when there are several ranks");
  const std::int64_t largest = largest_gradient_range(layout);
  if (exchange_ == nullptr) {
    copies_ = backend.make_copy_queue();
    for (auto& b : device_half_) b = backend.allocate(DType::bf16, largest);
  } else {
    grads32_.resize(grads16_.size());
    for (auto& s : staging_) s.resize(static_cast<std::size_t>(largest));
  }
}

void GradientHandover::range_final(model::ParameterRange range, Tensor summed) {
  MLPO_CHECK(summed.numel() == range.count && summed.dtype == DType::f32,
             "gradient range " + summed.describe());
  if (exchange_ == nullptr) {
    const int b = next_half_;
    next_half_ ^= 1;
    // The cast may overwrite buffer b only once its previous copy has read it.
    if (half_in_flight_[b]) copies_->order_compute_after_copies();
    const Tensor half = device_half_[b].view(DType::bf16, {range.count});
    backend_.cast(half, summed);
    copies_->to_host(grads16_.data() + range.offset, half);
    half_in_flight_[b] = true;
    return;
  }
  const int b = next_staging_;
  next_staging_ ^= 1;
  pending_[b].wait();  // the reduce-scatter that last used this buffer
  std::span<float> full(staging_[b].data(), static_cast<std::size_t>(range.count));
  backend_.copy_to_host(full.data(), summed);
  pending_[b] = exchange_->reduce_scatter<float>({range.offset, range.offset + range.count}, full,
                                                 std::span<float>(grads32_));
}

void GradientHandover::finish() {
  if (exchange_ == nullptr) {
    copies_->wait();
    half_in_flight_[0] = half_in_flight_[1] = false;
    return;
  }
  exchange_->drain();
  for (auto& p : pending_) p.wait();
  fp32_to_bf16(grads32_.data(), grads16_.data(), grads32_.size());
}

}  // namespace mlpo::compute
