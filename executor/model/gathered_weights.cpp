#include "executor/model/gathered_weights.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::model {

namespace {

std::int64_t largest_range(const ParameterLayout& layout) {
  std::int64_t n = 0;
  for (WeightPass pass : {WeightPass::forward, WeightPass::backward})
    for (WeightPart part : weight_walk(layout, pass))
      for (const ParameterRange& r : part_ranges(layout, part)) n = std::max(n, r.count);
  return n;
}

}  // namespace

GatheredWeights::GatheredWeights(Backend& backend, const ParameterLayout& layout,
                                 comm::LayerExchange& exchange, std::span<const bf16> shard)
    : backend_(backend),
      layout_(layout),
      exchange_(exchange),
      shard_(shard),
      host_a_(static_cast<std::size_t>(largest_range(layout))),
      host_b_(host_a_.size()),
      device_(backend.allocate(DType::bf16, largest_part_elements(layout))),
      device_elements_(largest_part_elements(layout)) {
  MLPO_CHECK(exchange.partition().total() == layout.total(),
             "ZeRO partition of " + std::to_string(exchange.partition().total()) +
                 " parameters for a model of " + std::to_string(layout.total()));
  MLPO_CHECK(static_cast<std::int64_t>(shard.size()) == exchange.partition().mine().elements,
             "weight shard size");
}

GatheredWeights::~GatheredWeights() = default;

void GatheredWeights::begin_pass(WeightPass pass) {
  prefetch_.reset();  // waits for a gather the previous pass started and never used (after an error)
  walk_ = weight_walk(layout_, pass);
  next_ = 0;
  std::vector<comm::ParamRange> ranges;
  for (WeightPart part : walk_)
    for (const ParameterRange& r : part_ranges(layout_, part))
      ranges.push_back({r.offset, r.offset + r.count});
  prefetch_ = std::make_unique<comm::PrefetchedLayers>(exchange_, std::move(ranges), shard_,
                                                       std::span<bf16>(host_a_), std::span<bf16>(host_b_));
}

PartWeights GatheredWeights::acquire(WeightPart part) {
  MLPO_CHECK(prefetch_ && next_ < walk_.size() && walk_[next_] == part,
             "acquire(" + part.describe() + ") out of the walk order (expected " +
                 (next_ < walk_.size() ? walk_[next_].describe() : std::string("no more parts")) + ")");
  ++next_;
  const Tensor all = device_.view(DType::bf16, {device_elements_});
  PartWeights w;
  std::int64_t at = 0;
  for (const ParameterRange& r : part_ranges(layout_, part)) {
    const std::span<const bf16> gathered = prefetch_->acquire();  // also starts gathering the next range
    const Tensor piece = all.slice(at, {r.count});
    backend_.copy_from_host(piece, gathered.data());
    prefetch_->release();
    w.add(r, piece);
    at += r.count;
  }
  return w;
}

}  // namespace mlpo::model
