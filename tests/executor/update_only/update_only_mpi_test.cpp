// `mlpo-run --update-only` under mpirun: each launched process is one rank (the layout a
// multi-node job has), against the same ranks forked by one process. The state, the global
// gradient norm and the per-tier bytes must be the same; a --ranks that disagrees with the
// launched world is refused naming both.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "executor/update_only/update_only_run.hpp"
#include "tests/executor/offload/offload_test_util.hpp"

namespace mlpo::update_only {
namespace {

using offload::testing::ScratchTiers;

constexpr std::int64_t kParams = 200000;
constexpr std::int64_t kSteps = 4;

struct Outcome {
  int status = -1;
  std::string output;
};

// Runs a shell command line; its stdout and stderr together.
Outcome shell(const std::string& command) {
  Outcome o;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return o;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) o.output.append(buffer, n);
  const int status = ::pclose(pipe);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return o;
}

std::string launched(const std::string& plan, const std::string& log, const std::string& extra) {
  return std::string("/usr/bin/timeout -k 5 120 ") + MLPO_MPIEXEC + " --oversubscribe -np 2 " + MLPO_RUN_BIN +
         " --update-only --params " + std::to_string(kParams) + " --steps " + std::to_string(kSteps) +
         " --seed 42 --threads 1 --state-hash --quiet --plan " + plan + " --log " + log + extra;
}

std::vector<Json> records(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

class LaunchedUpdateOnly : public ::testing::Test {
 protected:
  void SetUp() override {
#if !MLPO_HAVE_MPI
    GTEST_SKIP() << "built with -DMLPO_MPI=OFF: no launched ranks to test";
#else
    ASSERT_EQ(::access(MLPO_MPIEXEC, X_OK), 0)
        << MLPO_MPIEXEC << " is missing: run scripts/setup.sh (openmpi-bin)";
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);  // CI runs as root
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
#endif
  }
};

TEST_F(LaunchedUpdateOnly, TwoLaunchedRanksMatchTwoForkedRanks) {
  ScratchTiers tiers("launched-update");
  const Plan plan =
      tiers.plan(0.5, 2, OrderPolicy::alternating, 1);  // k = 1 on the disk: slots across processes
  const std::string plan_path = tiers.disk() + "/plan.json";
  save_plan(plan, plan_path);

  UpdateOnlyOptions forked;
  forked.plan = plan;
  forked.params = kParams;
  forked.ranks = 2;
  forked.steps = kSteps;
  forked.seed = 42;
  forked.threads = 1;
  forked.state_hash = true;
  const UpdateOnlyResult reference = run_update_only(forked, {});

  const std::string log = tiers.disk() + "/launched.jsonl";
  const Outcome run = shell(launched(plan_path, log, ""));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("state-sha256: " + reference.state_sha256), std::string::npos) << run.output;
  // Rank 0 alone prints: one summary line.
  EXPECT_EQ(run.output.find("summary:"), run.output.rfind("summary:")) << run.output;

  const std::vector<Json> steps = records(log);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps)) << run.output;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s + 1));
    const Json& want = reference.steps[s];
    EXPECT_EQ(steps[s]["grad_norm"].get<double>(), want["grad_norm"].get<double>());
    EXPECT_EQ(steps[s]["elements"], want["elements"]);
    EXPECT_EQ(steps[s]["rank_update_s"].size(), 2u);
    ASSERT_EQ(steps[s]["tiers"].size(), want["tiers"].size());
    for (std::size_t t = 0; t < want["tiers"].size(); ++t) {
      EXPECT_EQ(steps[s]["tiers"][t]["read_bytes"], want["tiers"][t]["read_bytes"]);
      EXPECT_EQ(steps[s]["tiers"][t]["write_bytes"], want["tiers"][t]["write_bytes"]);
    }
  }
  // Every rank's tier directory is gone at the end.
  for (const auto& entry : std::filesystem::directory_iterator(tiers.disk())) {
    if (entry.path().filename() == "mlpo") {
      EXPECT_TRUE(std::filesystem::is_empty(entry.path())) << entry.path();
    }
  }
}

TEST_F(LaunchedUpdateOnly, RanksThatDisagreeWithTheLaunchedWorldAreRefused) {
  ScratchTiers tiers("launched-update-ranks");
  const std::string plan_path = tiers.disk() + "/plan.json";
  save_plan(tiers.plan(1.0, 0, OrderPolicy::ascending), plan_path);
  const Outcome run = shell(launched(plan_path, tiers.disk() + "/log.jsonl", " --ranks 3"));
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_NE(run.output.find("--ranks 3: the launcher started 2 ranks"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace mlpo::update_only
