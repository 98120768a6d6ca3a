#include "executor/io/block_device_stats.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/units.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_io.hpp"
#include "temp_dir.hpp"

namespace mlpo::io {
namespace {

using testing::TempDir;

TEST(BlockDeviceStats, TmpfsHasNoBlockDevice) {
  EXPECT_FALSE(BlockDeviceStats::of("/dev/shm").has_value());
  TempDir shm("/dev/shm");
  TierIo tio({"shm", shm.path(), 1 * MiB, 4, false}, nullptr, {});
  EXPECT_FALSE(tio.device().has_value());
}

TEST(BlockDeviceStats, ADirectoryNotMadeYetIsOnItsParentsDevice) {
  TempDir disk;
  const auto parent = BlockDeviceStats::of(disk.path());
  const auto child = BlockDeviceStats::of(disk.path() / "not" / "made" / "yet");
  ASSERT_EQ(parent.has_value(), child.has_value());
  if (parent) {
    EXPECT_EQ(parent->name(), child->name());
  }
}

// The device's counters see the tier's own O_DIRECT writes (and, node-wide, anyone else's:
// so the test asks for at least its bytes, never for exactly them).
TEST(BlockDeviceStats, CountsATiersDirectWrites) {
  TempDir disk;
  PinnedBufferPool pool(16 * MiB);
  TierIo tio({"disk", disk.path(), 1 * MiB, 8, true}, &pool, {});
  if (!tio.device())
    GTEST_SKIP() << disk.path() << " is not on a block device (overlay, btrfs, tmpfs or no /sys)";
  TierFile& file = tio.open_file("f.bin", 16 * MiB);
  if (!file.direct()) GTEST_SKIP() << disk.path() << " refuses O_DIRECT: writes would stay in the page cache";
  PinnedBuffer buf = pool.acquire(16 * MiB);
  std::memset(buf.data(), 7, buf.size());
  const auto before = tio.device()->snapshot();
  tio.write(file, 0, buf.size(), buf.data()).wait();
  const auto after = tio.device()->snapshot();
  ASSERT_TRUE(before && after);
  EXPECT_GE(after->write_bytes - before->write_bytes, 16 * MiB) << "device " << tio.device()->name();
  EXPECT_GE(after->busy_ms, before->busy_ms);
  EXPECT_GE(after->read_bytes, before->read_bytes);
  EXPECT_FALSE(tio.device()->name().empty());
}

}  // namespace
}  // namespace mlpo::io
