#include "core/subgroup_placement.hpp"

#include "core/error.hpp"

namespace mlpo {

std::vector<int> subgroup_placement(const std::vector<double>& fractions, std::int64_t count) {
  MLPO_CHECK(!fractions.empty() && count >= 0, "placement needs at least one tier");
  std::vector<int> tiers(static_cast<std::size_t>(count));
  std::vector<double> credit(fractions.size(), 0.0);
  for (auto& tier : tiers) {
    std::size_t best = 0;
    for (std::size_t t = 0; t < fractions.size(); ++t) {
      credit[t] += fractions[t];
      if (credit[t] > credit[best]) best = t;
    }
    credit[best] -= 1.0;
    tier = static_cast<int>(best);
  }
  return tiers;
}

}  // namespace mlpo
