// Host memory is sized from the shard and checked before anything is allocated.
#include "executor/offload/host_memory_need.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "executor/offload/rank_engine.hpp"
#include "core/subgroup_layout.hpp"
#include "executor/offload/update_pipeline.hpp"
#include "offload_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::offload {

using mlpo::testing::expect_refusal;

TEST(HostMemoryNeed, SubgroupLargerThanTheShardIsSizedFromTheShard) {
  const SubgroupLayout layout(8192, std::int64_t{1} << 40);
  EXPECT_EQ(layout.count(), 1);
  EXPECT_EQ(layout.subgroup_elements(), 8192);
  EXPECT_EQ(layout.array_bytes(), 8192 * 4);
  PipelineOptions o;
  o.buffers = 4;
  o.cache_subgroups = 1000;  // more than the shard has: at most every subgroup is cached
  EXPECT_EQ(pipeline_pool_bytes(layout, o), 5u * 3 * 8192 * 4);
}

TEST(HostMemoryNeed, ListsBuffersCacheAndInPlaceTiersByField) {
  testing::ScratchTiers dirs("need");
  Plan plan = dirs.plan(0.5, 2, OrderPolicy::alternating);  // disk streamed, shm host (mapped)
  const RankShard shard = shard_for(10 * 16384, 1, 0);
  const HostMemoryNeed need = host_memory_need(plan, shard);
  const std::uint64_t extent = 3 * 16384 * 4;
  ASSERT_EQ(need.items.size(), 3u);
  EXPECT_EQ(need.items[0].field, "buffers");
  EXPECT_EQ(need.items[0].bytes, 4 * extent);
  EXPECT_EQ(need.items[1].field, "host_cache_subgroups");
  EXPECT_EQ(need.items[1].bytes, 2 * extent);
  EXPECT_EQ(need.items[2].field, "tiers[1].fraction");
  EXPECT_EQ(need.items[2].bytes, 5 * extent);
  EXPECT_EQ(need.total(), 11 * extent);
}

TEST(HostMemoryNeed, PlanBeyondTheAvailableMemoryIsRefusedNamingTheFieldsToLower) {
  testing::ScratchTiers dirs("refuse");
  const HostMemoryNeed need =
      host_memory_need(dirs.plan(0.5, 2, OrderPolicy::alternating), shard_for(10 * 16384, 1, 0));
  EXPECT_NO_THROW(check_host_memory(need, need.total(), "rank 0"));
  expect_refusal([&] { check_host_memory(need, need.total() - 1, "rank 0"); },
                 {"rank 0", "MemAvailable", "lower buffers, host_cache_subgroups, tiers[1].fraction"},
                 "expected a refusal");
}

// The engine refuses before allocating: 65536 pinned buffers of 12 MiB (768 GiB) are more
// than any test machine has, and must not be reserved (on the old code they were).
TEST(HostMemoryNeed, RankEngineRefusesAPlanBeyondHostMemoryBeforeAllocating) {
  testing::ScratchTiers dirs("engine");
  Plan plan = dirs.plan(1.0, 0, OrderPolicy::ascending, 0, std::int64_t{1} << 20);
  plan.buffers = 1 << 16;
  ThreadPool threads(1);
  try {
    RankEngine engine(plan, shard_for(std::int64_t{1} << 20, 1, 0), "test", threads);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MemAvailable"), std::string::npos) << e.what();
  }
}

}  // namespace mlpo::offload
