#pragma once
// Which tier each subgroup lives on: smooth weighted round-robin over the plan's fractions.
// Each step every tier earns its fraction, the richest tier takes the subgroup and pays 1;
// ties go to the lower tier index. Tiers are interleaved along the update order (80/20 gives
// A A B A A A A B A A ...), never in blocks, so every tier streams during the whole update;
// a tier with fraction 0 gets nothing. The executor (offload::PlacementPolicy) and the
// simulator (sim::Workload) both place subgroups with this one function, subgroup_placement.

#include <cstdint>
#include <vector>

namespace mlpo {

std::vector<int> subgroup_placement(const std::vector<double>& fractions, std::int64_t count);

}  // namespace mlpo
