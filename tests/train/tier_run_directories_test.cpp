// Tier run directories: each process (rank) gets its own, and the start-up clean-up removes only
// dead runs of this host — never a live rank's, nor any of another host (whose pids mean nothing
// here).
#include "executor/train/tier_run_directories.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>

#include "tests/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name);
  return name;
}

TEST(TierRunDirectories, CleansDeadRunsOfThisHostOnly) {
  test::TempDir dir;
  Plan plan = test::one_tier_plan(1 << 20, dir.path());
  const fs::path base = fs::path(dir.path()) / "mlpo";
  const long dead = 999'999'999;  // beyond pid_max: no such process
  const std::string host = this_host();
  const std::vector<std::string> removed = {"train-" + host + "-" + std::to_string(dead), "train-" + std::to_string(dead)};
  const std::vector<std::string> kept = {"train-" + host + "-" + std::to_string(::getppid()),  // alive
                                         "train-other-node-7-" + std::to_string(dead),           // another host's
                                         "bench-" + std::to_string(dead)};                       // not ours
  for (const auto& n : removed) fs::create_directories(base / n);
  for (const auto& n : kept) fs::create_directories(base / n);
  {
    const std::string mine = default_run_name();
    EXPECT_EQ(mine, "train-" + host + "-" + std::to_string(::getpid()));
    TierRunDirectories dirs(plan, mine);
    for (const auto& n : removed) EXPECT_FALSE(fs::exists(base / n)) << n;
    for (const auto& n : kept) EXPECT_TRUE(fs::exists(base / n)) << n;
    fs::create_directories(base / mine);
  }
  EXPECT_FALSE(fs::exists(base / default_run_name()));  // its own, at the end
  for (const auto& n : kept) EXPECT_TRUE(fs::exists(base / n)) << n;
}

}  // namespace
}  // namespace mlpo::train
