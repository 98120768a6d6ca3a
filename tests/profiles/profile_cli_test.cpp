// mlpo-profile end to end: --json prints a valid mlpo.profile/1 and nothing else, --out is
// written, --compare prints ratios, bad input exits 2 with one line and leaves nothing
// behind, and SIGINT mid-probe removes every probe file and exits 130.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "tests/executor/io/temp_dir.hpp"

extern char** environ;

namespace {

using mlpo::io::testing::TempDir;
namespace fs = std::filesystem;

const std::string kBin = MLPO_PROFILE_BIN;
// Small enough to finish in a few seconds: tiny sizes, one repetition, tiny GEMM shapes.
const std::string kSmall = " --quick --tier-size 8MiB --streams 2 --reps 1 --host-size 16MiB --model tiny";

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

// `prefix` goes before the program (e.g. "env PATH=... ").
Result run(const std::string& args, const fs::path& stderr_file, const std::string& prefix = "") {
  Result r;
  const std::string command = prefix + kBin + args + " 2>" + stderr_file.string();
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  if (FILE* f = std::fopen(stderr_file.c_str(), "r")) {
    while (std::fgets(buf.data(), buf.size(), f)) r.err += buf.data();
    std::fclose(f);
  }
  return r;
}

long lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

TEST(ProfileCli, JsonModePrintsOnlyAValidProfile) {
  TempDir tier, logs;
  const Result r = run(kSmall + " --json --tier t=" + tier.path().string(), logs.path() / "err");
  ASSERT_EQ(r.status, 0) << r.err;
  const mlpo::Profile p = mlpo::profile_from_json(mlpo::Json::parse(r.out));  // throws on any schema slip
  EXPECT_FALSE(p.host.adam_estimated);
  EXPECT_EQ(p.host.adam_elements_per_s.size(), static_cast<std::size_t>(p.host.cores));
  ASSERT_EQ(p.host.adam_checked_elements_per_s.size(), static_cast<std::size_t>(p.host.cores));
  EXPECT_GT(p.host.adam_checked_elements_per_s.back().value.median, 0);
  EXPECT_GT(p.host.cpu_gemm_gflops.median, 0);
  EXPECT_GT(p.host.bf16_convert_gbps.median, 0);
  EXPECT_GT(p.host.grad_norm_elements_per_s.median, 0);
  if (p.host.cores > 1) {
    EXPECT_GT(p.host.pool_dispatch_s.median, 0);
    EXPECT_LT(p.host.pool_dispatch_s.median, 0.01);  // a wake-up, not a sleep
  }
  EXPECT_GT(p.host.thread_start_s.median, 0);
  EXPECT_LT(p.host.thread_start_s.median, 0.01);
  if (p.gpus.empty()) {
    EXPECT_FALSE(p.gpus_reason.empty());
  }
  ASSERT_EQ(p.tiers.size(), 1u);
  EXPECT_EQ(p.tiers[0].name, "t");
  ASSERT_EQ(p.tiers[0].read_gbps.size(), 2u);
  EXPECT_EQ(p.tiers[0].read_gbps[1].streams, 2);
  EXPECT_EQ(p.tiers[0].read_gbps[1].value.repetitions, 1);
  EXPECT_TRUE(fs::is_empty(tier.path()));
}

TEST(ProfileCli, CommMeasuresHostMpiCollectivesUnderMpirun) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun in PATH";
  // Open MPI's own allocations at exit are leaks to ASan (the debug preset): not ours, as in
  // tests/executor/comm's mpirun tests.
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  TempDir tier, logs;
  const Result r =
      run(kSmall + " --json --comm --comm-size 1MiB --tier t=" + tier.path().string(), logs.path() / "err");
  ASSERT_EQ(r.status, 0) << r.err;
  const mlpo::Profile p = mlpo::profile_from_json(mlpo::Json::parse(r.out));
  ASSERT_TRUE(p.comm.host_mpi.measured) << r.err;
  EXPECT_EQ(p.comm.host_mpi.ranks, 2);
  EXPECT_GT(p.comm.host_mpi.all_gather_gbps.median, 0);
  EXPECT_GT(p.comm.host_mpi.reduce_scatter_gbps.median, 0);
  EXPECT_EQ(p.comm.host_mpi.all_gather_gbps.repetitions, 1);
  EXPECT_EQ(p.comm.host_mpi.all_gather_gbps.size_bytes, 1 << 20);
  EXPECT_FALSE(p.comm.nccl.measured);
}

TEST(ProfileCli, CommWithoutMpirunWarnsAndLeavesTheFiguresOut) {
  TempDir tier, logs;
  const Result r = run(kSmall + " --json --comm --tier t=" + tier.path().string(), logs.path() / "err",
                       "env PATH=/nonexistent ");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no mpirun in PATH"), std::string::npos) << r.err;
  EXPECT_FALSE(mlpo::Json::parse(r.out).contains("comm"));
}

TEST(ProfileCli, OutFileIsWrittenAndCompareShowsRatios) {
  TempDir tier, work;
  const std::string out = (work.path() / "p.json").string();
  const Result first =
      run(kSmall + " --tier t=" + tier.path().string() + " --out " + out, work.path() / "err");
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("tier 't'"), std::string::npos) << first.out;  // the summary table
  const mlpo::Profile written = mlpo::load_profile(out);
  EXPECT_EQ(written.tiers.size(), 1u);
  const Result second = run(kSmall + " --tier t=" + tier.path().string() + " --out " +
                                (work.path() / "q.json").string() + " --compare " + out,
                            work.path() / "err");
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_NE(second.out.find("new/old"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("tiers[t].read_gbps@2"), std::string::npos) << second.out;
  EXPECT_TRUE(fs::is_empty(tier.path()));
}

struct BadInput {
  const char* name;
  std::string args;  // {T} = an existing tier directory, {W} = a scratch directory
  const char* message;
};

TEST(ProfileCli, BadInputExitsTwoWithOneLineAndLeavesNothing) {
  const std::vector<BadInput> cases = {
      {"MissingPath", " --tier a=/nonexistent/mlpo-tier --out {W}/p.json", "does not exist"},
      {"DuplicateName", " --tier a={T} --tier a={T} --out {W}/p.json", "duplicate tier name 'a'"},
      {"OutDirMissing", " --tier a={T} --out /nonexistent/dir/p.json", "does not exist"},
      {"BadKindlessSpec", " --tier {T} --out {W}/p.json", "expected NAME=PATH"},
      {"CompareMissing", " --tier a={T} --out {W}/p.json --compare /nonexistent/old.json", "old.json"},
      // Refused before profiling (on the old code: after it, at the final rename).
      {"OutIsADirectory", " --tier a={T} --out {W}", "is a directory"},
      // The "no --tier given" note waits until the input is known to be good: one line.
      {"DefaultTierWithBadOut", " --out /nonexistent/dir/p.json", "does not exist"},
  };
  for (const BadInput& c : cases) {
    TempDir tier, work;
    std::string args = c.args;
    for (std::size_t at; (at = args.find("{T}")) != std::string::npos;)
      args.replace(at, 3, tier.path().string());
    for (std::size_t at; (at = args.find("{W}")) != std::string::npos;)
      args.replace(at, 3, work.path().string());
    const Result r = run(kSmall + args, tier.path().parent_path() / (std::string("err-") + c.name));
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.name << ": " << r.err;
    EXPECT_TRUE(fs::is_empty(tier.path())) << c.name;
    EXPECT_TRUE(fs::is_empty(work.path())) << c.name;
    fs::remove(tier.path().parent_path() / (std::string("err-") + c.name));
  }
}

TEST(ProfileCli, SigintMidProbeRemovesEveryFileAndExits130) {
  TempDir tier, work;
  const std::string out = (work.path() / "p.json").string();
  const std::string tier_arg = "t=" + tier.path().string();
  std::vector<std::string> args = {kBin,        "--quick", "--tier", tier_arg, "--tier-size", "256MiB",
                                   "--streams", "2",       "--reps", "50",     "--host-size", "16MiB",
                                   "--model",   "tiny",    "--out",  out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, kBin.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Wait until a probe file exists in the tier, i.e. the tier probe is writing.
  bool writing = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!writing && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(tier.path(), ec))
      if (e.path().extension() == ".bin") writing = true;
    if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int raw = 0;
  ASSERT_EQ(::waitpid(pid, &raw, 0), pid);
  EXPECT_TRUE(writing) << "the tier probe never started writing";
  ASSERT_TRUE(WIFEXITED(raw)) << "killed by signal " << (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
  EXPECT_EQ(WEXITSTATUS(raw), 130);
  EXPECT_TRUE(fs::is_empty(tier.path()));
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
