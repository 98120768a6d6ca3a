#include "core/update_order.hpp"

#include <gtest/gtest.h>

namespace mlpo {

namespace {

struct Counts {
  std::int64_t hits = 0, reads = 0, writes = 0;
};

// Reads = misses; writes = steps that leave the cache now (not kept) + evictions.
Counts count(const std::vector<UpdateStep>& steps) {
  Counts c;
  for (const auto& s : steps) {
    c.hits += s.hit;
    c.reads += !s.hit && !s.resident;
    c.writes += (!s.stays_cached && !s.resident) + (s.evicted ? 1 : 0);
  }
  return c;
}

// No step hits the cache: each of the `n` subgroups is read and written once.
void expect_no_hits(const std::vector<UpdateStep>& steps, std::int64_t n) {
  const Counts c = count(steps);
  EXPECT_EQ(c.hits, 0);
  EXPECT_EQ(c.reads, n);
  EXPECT_EQ(c.writes, n);
}

}  // namespace

TEST(UpdateOrderPolicy, AlternatingFlipsEveryIteration) {
  EXPECT_EQ(update_order(OrderPolicy::alternating, 0, 4), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(update_order(OrderPolicy::alternating, 1, 4), (std::vector<std::int64_t>{3, 2, 1, 0}));
  EXPECT_EQ(update_order(OrderPolicy::ascending, 1, 4), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(CacheOrderInterplay, AlternatingStartsOnTheCachedSubgroups) {
  SubgroupCache cache(3);
  cache.plan_iteration(update_order(OrderPolicy::alternating, 0, 10));
  auto steps = cache.plan_iteration(update_order(OrderPolicy::alternating, 1, 10));
  // Iteration 0 ended with 7, 8, 9 cached; iteration 1 goes 9, 8, 7, ... and hits exactly those.
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(steps[i].hit, i < 3) << "step " << i << " subgroup " << steps[i].subgroup;
  Counts c = count(steps);
  EXPECT_EQ(c.reads, 7);
  EXPECT_EQ(c.writes, 7);
}

TEST(CacheOrderInterplay, AscendingEvictsBeforeReuse) {
  SubgroupCache cache(3);
  cache.plan_iteration(update_order(OrderPolicy::ascending, 0, 10));
  auto steps = cache.plan_iteration(update_order(OrderPolicy::ascending, 1, 10));
  expect_no_hits(steps, 10);
}

TEST(CacheOrderInterplay, NoCacheReadsAndWritesEverything) {
  SubgroupCache cache(0);
  auto steps = cache.plan_iteration(update_order(OrderPolicy::alternating, 0, 5));
  expect_no_hits(steps, 5);
}

TEST(SubgroupCacheLru, HitMakesTheSubgroupMostRecentlyUpdated) {
  SubgroupCache cache(2);
  auto steps = cache.plan_iteration({0, 1, 0, 2, 3});
  EXPECT_TRUE(steps[2].hit);
  ASSERT_TRUE(steps[3].evicted.has_value());
  EXPECT_EQ(*steps[3].evicted, 1);  // 0 was updated again after 1
  ASSERT_TRUE(steps[4].evicted.has_value());
  EXPECT_EQ(*steps[4].evicted, 0);
  EXPECT_EQ(cache.lru_order(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_FALSE(cache.contains(0));
  EXPECT_TRUE(cache.contains(3));
}

TEST(CacheOrderInterplay, CachedSubgroupIsNeverWrittenWhileCached) {
  SubgroupCache cache(2);
  for (int it = 0; it < 4; ++it) {
    for (const auto& s : cache.plan_iteration(update_order(OrderPolicy::alternating, it, 6))) {
      if (s.evicted) {
        EXPECT_FALSE(cache.contains(*s.evicted));
      }
    }
  }
  EXPECT_EQ(cache.lru_order().size(), 2u);  // full, and nothing in it was written back
}

TEST(CacheOrderInterplay, ResidentSubgroupsBypassTheCache) {
  SubgroupCache cache(2);
  auto steps = cache.plan_iteration(update_order(OrderPolicy::ascending, 0, 6),
                                    [](std::int64_t s) { return s % 2 == 0; });
  for (const auto& s : steps) {
    if (s.subgroup % 2 == 0) {
      EXPECT_TRUE(s.resident);
      EXPECT_FALSE(cache.contains(s.subgroup));
    }
  }
  EXPECT_EQ(cache.lru_order(), (std::vector<std::int64_t>{3, 5}));
}

}  // namespace mlpo
