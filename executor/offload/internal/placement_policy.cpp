#include "executor/offload/internal/placement_policy.hpp"

#include "core/subgroup_placement.hpp"

namespace mlpo::offload {

PlacementPolicy::PlacementPolicy(const std::vector<double>& fractions, std::int64_t count)
    : per_tier_(fractions.size(), 0) {
  homes_.reserve(static_cast<std::size_t>(count));
  for (int tier : subgroup_placement(fractions, count))
    homes_.push_back(SubgroupHome{tier, per_tier_[static_cast<std::size_t>(tier)]++});
}

}  // namespace mlpo::offload
