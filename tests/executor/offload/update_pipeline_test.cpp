#include "executor/offload/update_pipeline.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include "core/error.hpp"
#include "offload_test_util.hpp"
#include "pipeline_rig.hpp"

namespace mlpo::offload {

using testing::Rig;

TEST(UpdatePipelineIo, CacheHitsSkipReadsAndWrites) {
  testing::ScratchTiers dirs("hits");
  Rig rig(dirs.plan(0.5, 3, OrderPolicy::alternating, 0, 16384, TierKind::other), 10 * 16384);
  UpdateStats first = rig.step(0);
  EXPECT_EQ(first.cache_hits, 0);
  EXPECT_EQ(first.reads, 10);
  EXPECT_EQ(first.writes, 7);  // the last 3 stay cached
  UpdateStats second = rig.step(1);
  EXPECT_EQ(second.cache_hits, 3);
  EXPECT_EQ(second.reads, 7);
  EXPECT_EQ(second.writes, 7);
  std::uint64_t bytes = 0;
  for (const auto& t : second.tiers) bytes += t.read_bytes;
  EXPECT_EQ(bytes, static_cast<std::uint64_t>(7 * rig.layout.extent_bytes()));
}

// Each file tier's stats carry its block device's counters over the phase, when it has one:
// node-wide, so at least the bytes this update wrote with O_DIRECT (the tmpfs tier has none).
TEST(UpdatePipelineIo, FileTiersReportTheirBlockDevicesCounters) {
  testing::ScratchTiers dirs("device");
  Rig rig(dirs.plan(0.5, 0, OrderPolicy::ascending, 0, 16384, TierKind::other), 10 * 16384);
  const UpdateStats st = rig.step(0);
  ASSERT_EQ(st.tiers.size(), 2u);
  EXPECT_FALSE(st.tiers[1].device.has_value()) << "the shm tier is on tmpfs";
  if (!rig.tiers[0].device()) GTEST_SKIP() << dirs.disk() << " is not on a block device";
  ASSERT_TRUE(st.tiers[0].device.has_value());
  EXPECT_GT(st.tiers[0].write_bytes, 0u);
  if (rig.tiers[0].tier().direct_io) {
    EXPECT_GE(st.tiers[0].device->write_bytes, st.tiers[0].write_bytes) << "O_DIRECT writes reach the device";
  }
}

// Prefetch depth 1 reads the next miss while AdamW updates this one (docs/formats.md:
// "subgroups read ahead of the one being updated"), as the simulator models it: inside the
// first subgroup's AdamW (its weights callback), the second subgroup's read completes.
// Counting a read as consumed only after its AdamW held the tier idle for that AdamW.
TEST(UpdatePipelineIo, PrefetchDepthOneReadsTheNextMissDuringThisOnesAdamW) {
  testing::ScratchTiers dirs("depth1");
  Plan plan = dirs.plan(1.0, 0, OrderPolicy::ascending);
  plan.buffers = 2;
  plan.prefetch_depth = 1;
  Rig rig(plan, 4 * 16384);
  const auto extent = static_cast<std::uint64_t>(rig.layout.extent_bytes());
  rig.step(0);
  const std::uint64_t before = rig.tiers[0].counter_snapshot().bytes_read;
  bool next_read_during_first = false;
  int called = 0;
  AdamWParams adam;
  adam.step = 2;
  rig.step(1, adam, [&](const Subgroup&) {
    if (called++ != 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (rig.tiers[0].counter_snapshot().bytes_read - before >= 2 * extent) {
        next_read_during_first = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  EXPECT_TRUE(next_read_during_first) << "the second read waited for the first subgroup's AdamW";
}

TEST(UpdatePipelineIo, HostTierIsUpdatedInPlaceInItsMappedFile) {
  testing::ScratchTiers dirs("mapped");
  Rig rig(dirs.plan(0.5, 0, OrderPolicy::ascending), 10 * 16384);
  std::int64_t on_shm = 0;
  for (std::int64_t s = 0; s < rig.layout.count(); ++s) on_shm += rig.store.resident(s) ? 1 : 0;
  EXPECT_EQ(on_shm, 5);
  rig.step(0);
  UpdateStats second = rig.step(1);
  EXPECT_EQ(second.reads, 5);  // the disk's half only
  EXPECT_EQ(second.writes, 5);
  ASSERT_EQ(second.tiers.size(), 2u);
  EXPECT_EQ(second.tiers[1].name, "shm");
  EXPECT_EQ(second.tiers[1].read_bytes, 0u);
  EXPECT_EQ(second.tiers[1].write_bytes, 0u);
  // The tier file holds the updated state: read it back with plain I/O and compare.
  const auto file = std::filesystem::path(dirs.shm()) / "mlpo/test/rank0.state";
  std::vector<float> extent(static_cast<std::size_t>(rig.layout.extent_bytes() / 4));
  std::int64_t compared = 0;
  rig.pipeline.visit_state([&](const Subgroup& sg, const float* p, const float* m, const float* v) {
    if (!rig.store.resident(sg.index)) return;
    std::FILE* f = std::fopen(file.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(rig.store.placement().home(sg.index).extent * rig.layout.extent_bytes()),
               SEEK_SET);
    ASSERT_EQ(std::fread(extent.data(), 4, extent.size(), f), extent.size());
    std::fclose(f);
    const std::int64_t floats = rig.store.floats_per_array();
    for (std::int64_t i = 0; i < sg.elements; ++i) {
      ASSERT_EQ(extent[static_cast<std::size_t>(i)], p[i]);
      ASSERT_EQ(extent[static_cast<std::size_t>(floats + i)], m[i]);
      ASSERT_EQ(extent[static_cast<std::size_t>(2 * floats + i)], v[i]);
    }
    EXPECT_NE(m[0], 0.0f);  // really updated
    ++compared;
  });
  EXPECT_EQ(compared, 5);
}

TEST(UpdatePipelineIo, TruncatedTierFileMidRunIsAClearErrorNotAHang) {
  testing::ScratchTiers dirs("trunc");
  Rig rig(dirs.plan(0.5, 0, OrderPolicy::ascending), 8 * 16384);
  rig.step(0);
  std::filesystem::resize_file(std::filesystem::path(dirs.disk()) / "mlpo/test/rank0.state", 0);
  auto result = std::async(std::launch::async, [&] {
    try {
      rig.step(1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  });
  ASSERT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "update hung after a tier error";
  std::string message = result.get();
  EXPECT_NE(message.find("disk"), std::string::npos) << message;
  EXPECT_NE(message.find("rank0.state"), std::string::npos) << message;
  EXPECT_EQ(rig.pool.in_use(), 0u) << "buffers leaked after the error";
}

// The cache holds leases of the pool: they go back to it when the pipeline ends.
TEST(UpdatePipelineIo, NoBuffersLeakWhenAPipelineWithCachedSubgroupsEnds) {
  testing::ScratchTiers dirs("leak");
  Rig rig(dirs.plan(0.5, 2, OrderPolicy::alternating), 6 * 16384);
  {
    UpdatePipeline pipeline(rig.store, rig.pool, std::vector<io::TierSlots*>(rig.tiers.size(), nullptr),
                            rig.threads, rig.options);
    for (std::int64_t iteration = 0; iteration < 2; ++iteration) {
      AdamWParams adam;
      adam.step = iteration + 1;
      pipeline.update(rig.schedule(iteration), rig.grads, adam, {});
    }
    EXPECT_EQ(rig.pool.in_use(), 2 * static_cast<std::uint64_t>(rig.layout.extent_bytes()));  // the cache
  }
  EXPECT_EQ(rig.pool.in_use(), 0u);
}

}  // namespace mlpo::offload
