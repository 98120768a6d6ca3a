#include "executor/offload/internal/placement_policy.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/subgroup_layout.hpp"

namespace mlpo::offload {

TEST(PlacementFractions, CountsFollowFractionsWithinOne) {
  const std::vector<std::vector<double>> cases = {
      {1.0}, {0.5, 0.5}, {0.8, 0.2}, {0.6, 0.3, 0.1}, {0.25, 0.25, 0.25, 0.25}, {0.0, 1.0}};
  for (const auto& f : cases) {
    for (std::int64_t n : {1, 7, 100, 1001}) {
      PlacementPolicy p(f, n);
      std::int64_t total = 0;
      for (int t = 0; t < p.tiers(); ++t) {
        EXPECT_LE(std::fabs(static_cast<double>(p.subgroups_on(t)) - f[t] * static_cast<double>(n)), 1.0)
            << "tier " << t << " n " << n;
        total += p.subgroups_on(t);
      }
      EXPECT_EQ(total, n);
    }
  }
}

TEST(PlacementFractions, InterleavesRatherThanBlocks) {
  PlacementPolicy p({0.8, 0.2}, 100);
  // Every window of 5 consecutive subgroups holds exactly one of tier 1.
  for (std::int64_t start = 0; start + 5 <= 100; start += 5) {
    int on_b = 0;
    for (std::int64_t i = start; i < start + 5; ++i) on_b += p.home(i).tier == 1;
    EXPECT_EQ(on_b, 1) << "window at " << start;
  }
}

TEST(PlacementFractions, ExtentsAreDenseOrdinalsPerTier) {
  PlacementPolicy p({0.5, 0.3, 0.2}, 57);
  std::vector<std::int64_t> next(3, 0);
  for (std::int64_t i = 0; i < 57; ++i) {
    const auto& h = p.home(i);
    EXPECT_EQ(h.extent, next[h.tier]++);
  }
}

TEST(PlacementFractions, ZeroFractionTierGetsNothing) {
  PlacementPolicy p({0.0, 0.7, 0.3}, 500);
  EXPECT_EQ(p.subgroups_on(0), 0);
}

TEST(SubgroupLayoutTest, LastSubgroupIsShortAndArraysArePadded) {
  SubgroupLayout l(10000, 4096);
  EXPECT_EQ(l.count(), 3);
  EXPECT_EQ(l.subgroup(2).begin, 8192);
  EXPECT_EQ(l.subgroup(2).elements, 10000 - 8192);
  EXPECT_EQ(l.array_bytes(), 16384);
  EXPECT_EQ(l.extent_bytes(), 3 * 16384);
}

}  // namespace mlpo::offload
