// Tier run directories: each process (rank) gets its own, and the start-up clean-up removes only
// dead runs of this host — training's and update-only's — never a live rank's, nor any of
// another host (whose pids mean nothing here).
#include "executor/offload/tier_run_directories.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "executor/update_only/update_only_run.hpp"

namespace mlpo::offload {
namespace {

namespace fs = std::filesystem;

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name);
  return name;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mlpo-rundirs-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Plan one_file_tier_plan(std::int64_t params, const fs::path& dir) {
  Plan p;
  p.model_name = "synthetic";
  p.model_params = params;
  p.subgroup_elements = 65536;
  p.tiers = {PlanTier{"a", dir.string(), TierKind::other, 1.0, 0}};
  p.order = OrderPolicy::ascending;
  p.direct_io = false;
  return p;
}

const long kDead = 999'999'999;  // beyond pid_max: no such process

TEST(TierRunDirectories, CleansDeadRunsOfThisHostOnly) {
  TempDir dir;
  Plan plan = one_file_tier_plan(1 << 20, dir.path());
  const fs::path base = dir.path() / "mlpo";
  const std::string host = this_host();
  const std::vector<std::string> removed = {
      "train-" + host + "-" + std::to_string(kDead), "train-" + std::to_string(kDead),
      "update-" + host + "-" + std::to_string(kDead), "update-" + std::to_string(kDead)};
  const std::vector<std::string> kept = {"train-" + host + "-" + std::to_string(::getppid()),   // alive
                                         "update-" + host + "-" + std::to_string(::getppid()),  // alive
                                         "train-other-node-7-" + std::to_string(kDead),  // another host's
                                         "bench-" + std::to_string(kDead)};              // not ours
  for (const auto& n : removed) fs::create_directories(base / n);
  for (const auto& n : kept) fs::create_directories(base / n);
  {
    const std::string mine = default_run_name();
    EXPECT_EQ(mine, "train-" + host + "-" + std::to_string(::getpid()));
    EXPECT_EQ(default_run_name("update"), "update-" + host + "-" + std::to_string(::getpid()));
    TierRunDirectories dirs(plan, mine);
    for (const auto& n : removed) EXPECT_FALSE(fs::exists(base / n)) << n;
    for (const auto& n : kept) EXPECT_TRUE(fs::exists(base / n)) << n;
    fs::create_directories(base / mine);
  }
  EXPECT_FALSE(fs::exists(base / default_run_name()));  // its own, at the end
  for (const auto& n : kept) EXPECT_TRUE(fs::exists(base / n)) << n;
}

// mlpo-run --update-only leaves no directory of its own and removes those of killed runs.
TEST(TierRunDirectories, UpdateOnlyRunCleansKilledRunsDirectories) {
  TempDir dir;
  const fs::path base = dir.path() / "mlpo";
  const std::string killed = "update-" + this_host() + "-" + std::to_string(kDead);
  fs::create_directories(base / killed);
  {
    update_only::UpdateOnlyOptions o;
    o.plan = one_file_tier_plan(1 << 16, dir.path());
    o.params = 1 << 16;
    o.steps = 1;
    o.threads = 1;
    update_only::run_update_only(o, {});
  }
  EXPECT_FALSE(fs::exists(base / killed));
  EXPECT_FALSE(fs::exists(base));  // its own removed too, and then the empty mlpo/
}

}  // namespace
}  // namespace mlpo::offload
