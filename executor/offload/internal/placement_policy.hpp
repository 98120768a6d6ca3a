#pragma once
// PlacementPolicy: which tier each subgroup lives on (core/subgroup_placement.hpp: smooth
// weighted round-robin over the plan's fractions, interleaved, the same function the
// simulator uses) and where in that tier's file. Each tier
// stores its subgroups densely: a subgroup's `extent` is its ordinal among that tier's
// subgroups, i.e. its extent index in the tier's state file (not a concurrency slot:
// io::TierSlots are those). Pure function of (fractions,
// count); the same on every rank and every run.

#include <cstdint>
#include <vector>

namespace mlpo::offload {

struct SubgroupHome {
  int tier = 0;
  std::int64_t extent = 0;  // index of its extent in the tier's state (and gradient) file
};

class PlacementPolicy {
 public:
  // fractions[t] >= 0 summing to 1 (checked by the plan); count = subgroups of the rank.
  PlacementPolicy(const std::vector<double>& fractions, std::int64_t count);

  const SubgroupHome& home(std::int64_t subgroup) const {
    return homes_.at(static_cast<std::size_t>(subgroup));
  }
  std::int64_t subgroups_on(int tier) const { return per_tier_.at(static_cast<std::size_t>(tier)); }
  int tiers() const { return static_cast<int>(per_tier_.size()); }

 private:
  std::vector<SubgroupHome> homes_;
  std::vector<std::int64_t> per_tier_;
};

}  // namespace mlpo::offload
