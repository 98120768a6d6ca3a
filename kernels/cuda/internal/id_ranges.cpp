#include "kernels/cuda/internal/id_ranges.hpp"

#include <algorithm>

namespace mlpo::gpu {

void IdRanges::record(const void* device, std::int64_t count, const std::int32_t* host) {
  forget(device, static_cast<std::size_t>(count) * sizeof(std::int32_t));
  if (count <= 0) return;
  const auto [lo, hi] = std::minmax_element(host, host + count);
  const auto begin = reinterpret_cast<std::uintptr_t>(device);
  if (entries_.size() == kMaxEntries) entries_.erase(entries_.begin());
  entries_.push_back({begin, begin + static_cast<std::uintptr_t>(count) * sizeof(std::int32_t), {*lo, *hi}});
}

void IdRanges::forget(const void* device, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(device), end = begin + bytes;
  std::erase_if(entries_, [&](const Entry& e) { return e.begin < end && begin < e.end; });
}

std::optional<IdRange> IdRanges::find(const void* device, std::int64_t count) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(device);
  const auto end = begin + static_cast<std::uintptr_t>(count) * sizeof(std::int32_t);
  for (const Entry& e : entries_)
    if (e.begin == begin && e.end == end) return e.range;
  return std::nullopt;
}

}  // namespace mlpo::gpu
