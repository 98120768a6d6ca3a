#include "executor/offload/placement_policy.hpp"

#include "core/error.hpp"

namespace mlpo::offload {

PlacementPolicy::PlacementPolicy(const std::vector<double>& fractions, std::int64_t count)
    : per_tier_(fractions.size(), 0) {
  MLPO_CHECK(!fractions.empty(), "placement needs at least one tier");
  // Smooth weighted round-robin: each step every tier earns its weight, the richest tier
  // gets the subgroup and pays the total. Ties go to the lower tier index.
  std::vector<double> credit(fractions.size(), 0.0);
  homes_.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    std::size_t best = 0;
    for (std::size_t t = 0; t < fractions.size(); ++t) {
      credit[t] += fractions[t];
      if (credit[t] > credit[best]) best = t;
    }
    credit[best] -= 1.0;
    homes_.push_back(SubgroupHome{static_cast<int>(best), per_tier_[best]++});
  }
}

}  // namespace mlpo::offload
