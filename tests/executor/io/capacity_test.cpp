#include "executor/io/capacity.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/tier_set.hpp"
#include "temp_dir.hpp"

namespace mlpo::io {
namespace {

using testing::TempDir;

TEST(CapacityCheck, ShortfallNamesTierPathNeedAndFreeSpace) {
  TempDir disk("/var/tmp");
  TierSet tiers({{"nvme", disk.path()}}, {nullptr, Diagnostics{}});
  const std::uint64_t need[] = {1000 * TiB};
  try {
    tiers.check_capacity(need);
    FAIL() << "1000 TiB must not fit on a test machine";
  } catch (const Error& e) {
    const std::string expected_prefix = "tier 'nvme' (" + disk.path().string() + "): needs 1000.0 TiB, ";
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(expected_prefix, 0), 0u) << msg;
    EXPECT_TRUE(std::regex_search(msg, std::regex(R"(, [0-9]+\.[0-9] (KiB|MiB|GiB|TiB) free$)"))) << msg;
  }
}

TEST(CapacityCheck, ReportsEveryShortTierAndPassesTheOnesThatFit) {
  TempDir disk("/var/tmp"), shm("/dev/shm");
  Tier a{"disk", disk.path()}, b{"shm", shm.path()};
  const CapacityNeed fits[] = {{&a, 1 * MiB}, {&b, 1 * MiB}};
  EXPECT_NO_THROW(check_capacity(fits));
  const CapacityNeed short_on_shm[] = {{&a, 1 * MiB}, {&b, 1000 * TiB}};
  try {
    check_capacity(short_on_shm);
    FAIL() << "expected a shortfall on shm";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tier 'shm'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("tier 'disk'"), std::string::npos) << msg;
  }
}

TEST(CapacityCheck, TiersOnOneFileSystemAreCheckedTogether) {
  TempDir disk("/var/tmp");
  Tier a{"a", disk.sub("a")}, b{"b", disk.sub("b")};
  const std::uint64_t free = free_bytes(disk.path(), "test");
  // Each fits alone, both together do not.
  const CapacityNeed needs[] = {{&a, free / 2 + free / 4}, {&b, free / 2 + free / 4}};
  EXPECT_THROW(check_capacity(needs), Error);
}

TEST(CapacityCheck, MissingTierPathIsAnError) {
  Tier t{"gone", "/var/tmp/mlpo-definitely-missing-dir"};
  const CapacityNeed needs[] = {{&t, 1}};
  EXPECT_THROW(check_capacity(needs), Error);
}

}  // namespace
}  // namespace mlpo::io
