#include "core/subgroup_layout.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace mlpo {

SubgroupLayout::SubgroupLayout(std::int64_t shard_elements, std::int64_t subgroup_elements)
    : shard_elements_(shard_elements),
      // A subgroup is never bigger than the shard: every buffer, cache entry and extent is
      // sized from it, and a plan's subgroup_elements may be far larger than a small shard.
      subgroup_elements_(shard_elements > 0 ? std::min(subgroup_elements, shard_elements)
                                            : subgroup_elements) {
  MLPO_CHECK(subgroup_elements > 0 && shard_elements >= 0, "subgroup layout sizes");
  count_ = (shard_elements + subgroup_elements - 1) / subgroup_elements;
  array_bytes_ = (subgroup_elements_ * 4 + kExtentAlign - 1) / kExtentAlign * kExtentAlign;
}

Subgroup SubgroupLayout::subgroup(std::int64_t index) const {
  MLPO_CHECK(index >= 0 && index < count_,
             "subgroup " + std::to_string(index) + " of " + std::to_string(count_));
  Subgroup s;
  s.index = index;
  s.begin = index * subgroup_elements_;
  s.elements = std::min(subgroup_elements_, shard_elements_ - s.begin);
  return s;
}

}  // namespace mlpo
