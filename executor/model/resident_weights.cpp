#include "executor/model/resident_weights.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "executor/model/parameter_init.hpp"

namespace mlpo::model {

namespace {
constexpr std::int64_t kStagingElements = 1 << 20;  // host -> device fp32 upload chunk
}

ResidentWeights::ResidentWeights(Backend& backend, const ParameterLayout& layout, DType storage)
    : backend_(backend),
      layout_(layout),
      buffer_(backend.allocate(storage, layout.total())),
      flat_(buffer_.view(storage, {layout.total()})) {}

void ResidentWeights::init(std::uint64_t seed, ThreadPool* threads) {
  std::vector<float> values(static_cast<std::size_t>(layout_.total()));
  if (threads != nullptr)
    initial_values(layout_, seed, 0, values, *threads);
  else
    initial_values(layout_, seed, 0, values);
  load(values);
}

void ResidentWeights::load(std::span<const float> values) {
  MLPO_CHECK(static_cast<std::int64_t>(values.size()) == layout_.total(),
             "load_weights: wrong element count");
  DeviceBuffer staging = backend_.allocate(DType::f32, kStagingElements);
  for (std::int64_t i = 0; i < layout_.total(); i += kStagingElements) {
    const std::int64_t n = std::min(kStagingElements, layout_.total() - i);
    Tensor chunk = staging.view(DType::f32, {n});
    backend_.copy_from_host(chunk, values.data() + i);
    backend_.cast(flat_.slice(i, {n}), chunk);
  }
}

void ResidentWeights::upload(const void* host) { backend_.copy_from_host(flat_, host); }

PartWeights ResidentWeights::acquire(WeightPart part) {
  PartWeights w;
  for (const ParameterRange& r : part_ranges(layout_, part)) w.add(r, flat_.slice(r.offset, {r.count}));
  return w;
}

}  // namespace mlpo::model
