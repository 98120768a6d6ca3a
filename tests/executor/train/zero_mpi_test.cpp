// ZeRO-3 data parallelism end to end: mlpo-run under Open MPI's mpirun (CPU backend, the tiny
// model, a few steps), against one process with the same global batch. Needs mpirun
// (scripts/setup.sh installs it): with MPI built and mpirun missing these tests fail; built
// with -DMLPO_MPI=OFF they skip.
//
// Global batch in every run: 4 micro-batches of 2 sequences per step — one process with
// --grad-accum 4, 2 ranks with --grad-accum 2, 4 ranks (oversubscribed) with --grad-accum 1.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "tests/executor/train/process_util.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test::TempDir;

constexpr int kSteps = 6;
constexpr int kGlobalMicroBatches = 4;

struct JobOutcome {
  int exit_status = -1;
  std::string output;
  std::vector<double> losses;  // from --log
  std::string weights;         // the exported safetensors
};

std::vector<double> losses_of(const std::string& log) {
  std::vector<double> losses;
  std::istringstream in(test::read_file(log));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) losses.push_back(Json::parse(line).at("loss").get<double>());
  return losses;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

class ZeroTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#if MLPO_HAVE_MPI
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);  // CI runs as root
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);  // Open MPI's own allocations (see tests/executor/comm)
    dir_ = new TempDir;
    data_ = new std::string(test::make_token_file(*dir_));
    reference_ = new JobOutcome(run_job(0, "reference", {}));
#endif
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete data_;
    delete dir_;
  }
  void SetUp() override {
#if !MLPO_HAVE_MPI
    GTEST_SKIP() << "built with -DMLPO_MPI=OFF: no multi-rank training to test";
#else
    ASSERT_EQ(access(MLPO_MPIEXEC, X_OK), 0)
        << MLPO_MPIEXEC << " is missing: run scripts/setup.sh (openmpi-bin)";
    ASSERT_EQ(reference_->exit_status, 0) << reference_->output;
    ASSERT_EQ(reference_->losses.size(), static_cast<std::size_t>(kSteps)) << reference_->output;
#endif
  }

  // The command line of a run with `ranks` ranks (0: one process without mpirun) writing into
  // dir/<name>/.
  static std::vector<std::string> command(int ranks, const std::string& name,
                                          const std::vector<std::string>& extra, int steps = kSteps) {
    const std::string out = *dir_ / name;
    fs::create_directories(out);
    std::vector<std::string> argv;
    if (ranks > 0)
      argv = {"/usr/bin/timeout",   "-k", "5", "120", MLPO_MPIEXEC, "--oversubscribe", "-np",
              std::to_string(ranks)};
    const int accum = kGlobalMicroBatches / std::max(ranks, 1);
    for (const std::string& a : {std::string(MLPO_RUN_BIN),
                                 std::string("--model"),
                                 std::string("tiny"),
                                 std::string("--seq-len"),
                                 std::string("32"),
                                 std::string("--micro-batch"),
                                 std::string("2"),
                                 std::string("--grad-accum"),
                                 std::to_string(accum),
                                 std::string("--data"),
                                 *data_,
                                 std::string("--steps"),
                                 std::to_string(steps),
                                 std::string("--lr-decay-steps"),
                                 std::to_string(kSteps),
                                 std::string("--seed"),
                                 std::string("5"),
                                 std::string("--lr"),
                                 std::string("3e-3"),
                                 std::string("--warmup-steps"),
                                 std::string("2"),
                                 std::string("--max-grad-norm"),
                                 std::string("0.5"),
                                 std::string("--threads"),
                                 std::string("1"),
                                 std::string("--blas-threads"),
                                 std::string("1"),
                                 std::string("--quiet"),
                                 std::string("--log"),
                                 out + "/log.jsonl"})
      argv.push_back(a);
    if (std::find(extra.begin(), extra.end(), "--export-safetensors") == extra.end())
      argv.insert(argv.end(), {"--export-safetensors", out + "/final.safetensors"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    // The default plan's directory; a --plan gives its own tiers (both together are an error).
    if (std::find(extra.begin(), extra.end(), "--plan") == extra.end())
      argv.insert(argv.end(), {"--state-dir", out + "/state"});
    return argv;
  }

  static JobOutcome finish(const std::string& name, int status) {
    const std::string out = *dir_ / name;
    JobOutcome r;
    r.exit_status = exit_code(status);
    r.output = test::read_file(out + "/output.txt");
    r.losses = losses_of(out + "/log.jsonl");
    r.weights = test::read_file(out + "/final.safetensors");
    return r;
  }

  static JobOutcome run_job(int ranks, const std::string& name, const std::vector<std::string>& extra,
                            int steps = kSteps) {
    const std::vector<std::string> argv = command(ranks, name, extra, steps);
    test::Child child(argv, {}, *dir_ / name + "/output.txt");
    return finish(name, child.wait());
  }

  static TempDir* dir_;
  static std::string* data_;
  static JobOutcome* reference_;  // one process, --grad-accum 4
};

TempDir* ZeroTraining::dir_ = nullptr;
std::string* ZeroTraining::data_ = nullptr;
JobOutcome* ZeroTraining::reference_ = nullptr;

#if MLPO_HAVE_MPI
// The ranks run under a plan of their own — two file tiers shared by all ranks of the node,
// the first with a node-wide concurrency limit of 1 (flock slots), a host cache and the
// alternating order — while one process ran the default plan: placement changes nothing.
TEST_F(ZeroTraining, TwoAndFourRanksGiveTheLossesAndWeightsOfOneProcess) {
  EXPECT_NE(reference_->losses.front(), reference_->losses.back());  // it trained
  EXPECT_EQ(test::read_file(*dir_ / "reference/log.jsonl").find("exchange_cpu_s"), std::string::npos)
      << "one process has no exchange to log";
  fs::create_directories(*dir_ / "tier-a");
  fs::create_directories(*dir_ / "tier-b");
  for (int ranks : {2, 4}) {
    Plan plan = test::two_tier_plan(test::tiny_params(), *dir_ / "tier-a", *dir_ / "tier-b");
    plan.cluster.ranks_per_node = ranks;
    const std::string plan_path = *dir_ / ("plan" + std::to_string(ranks) + ".json");
    save_plan(plan, plan_path);
    const JobOutcome job = run_job(ranks, "ranks" + std::to_string(ranks), {"--plan", plan_path});
    ASSERT_EQ(job.exit_status, 0) << ranks << " ranks:\n" << job.output;
    EXPECT_EQ(job.losses, reference_->losses) << ranks << " ranks: per-step losses differ from one process's";
    EXPECT_FALSE(job.weights.empty());
    EXPECT_TRUE(job.weights == reference_->weights)
        << ranks << " ranks: exported safetensors differ from one process's";
    // Rank 0 alone prints: one summary line.
    EXPECT_EQ(job.output.find("summary:"), job.output.rfind("summary:")) << job.output;
    // Every step logs what the exchange cost it: its thread's CPU and the compute's waits.
    std::istringstream log(test::read_file(*dir_ / ("ranks" + std::to_string(ranks)) + "/log.jsonl"));
    for (std::string line; std::getline(log, line);) {
      if (line.empty()) continue;
      const Json rec = Json::parse(line);
      EXPECT_GT(rec.value("exchange_cpu_s", -1.0), 0) << line;
      EXPECT_GE(rec.value("gather_wait_s", -1.0), 0) << line;
    }
  }
  EXPECT_FALSE(fs::exists(*dir_ / "tier-a/mlpo")) << "the ranks' tier directories are removed at the end";
}

std::vector<double> eval_losses_of(const std::string& log) {
  std::vector<double> losses;
  std::istringstream in(test::read_file(log));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && Json::parse(line).contains("eval_loss"))
      losses.push_back(Json::parse(line).at("eval_loss").get<double>());
  return losses;
}

// The validation loss over three micro-batches (an odd count: the second rank's share is padded
// with a forward it drops) is bitwise one process's on 2 ranks, and training is unchanged.
TEST_F(ZeroTraining, TwoRanksGiveTheEvalLossOfOneProcessBitwise) {
  std::string held_out;
  for (int i = 0; i < 60; ++i)
    held_out += "while (j < m) total += y[j] * v[j++]; // " + std::to_string(i) + "\n";
  test::write_file(*dir_ / "val.txt", held_out);
  data::prepare_data({*dir_ / "val.txt"}, *dir_ / "val.bin");
  const std::vector<std::string> eval = {"--eval-data", *dir_ / "val.bin", "--eval-every",
                                         "2",           "--eval-tokens",   "192"};
  const JobOutcome one = run_job(0, "eval-one", eval);
  const JobOutcome two = run_job(2, "eval-two", eval);
  ASSERT_EQ(one.exit_status, 0) << one.output;
  ASSERT_EQ(two.exit_status, 0) << two.output;
  const std::vector<double> evals = eval_losses_of(*dir_ / "eval-one/log.jsonl");
  ASSERT_EQ(evals.size(), 3u);  // steps 2, 4, 6
  EXPECT_EQ(eval_losses_of(*dir_ / "eval-two/log.jsonl"), evals);
  EXPECT_EQ(one.losses, reference_->losses);
  EXPECT_EQ(two.losses, reference_->losses);
}

TEST_F(ZeroTraining, TwoRankCheckpointResumesOnOneAndOnFourRanks) {
  // Steps 1-3 on 2 ranks, checkpoint at the end (step 3)...
  const JobOutcome first = run_job(2, "first-half", {"--checkpoint-dir", *dir_ / "ckpt2"}, 3);
  ASSERT_EQ(first.exit_status, 0) << first.output;
  ASSERT_EQ(first.losses.size(), 3u);
  EXPECT_EQ(first.losses, std::vector<double>(reference_->losses.begin(), reference_->losses.begin() + 3));
  EXPECT_TRUE(fs::exists(*dir_ / "ckpt2/ckpt-3/optimizer.rank1.v.f32"));
  // ... then steps 4-6 from copies of that checkpoint, on 1 and on 4 ranks.
  for (int ranks : {1, 4}) {
    const std::string ckpt = *dir_ / ("ckpt2-on-" + std::to_string(ranks));
    fs::copy(*dir_ / "ckpt2", ckpt, fs::copy_options::recursive);
    const JobOutcome rest = run_job(ranks == 1 ? 0 : ranks, "resumed-on-" + std::to_string(ranks),
                                    {"--checkpoint-dir", ckpt, "--resume"});
    ASSERT_EQ(rest.exit_status, 0) << rest.output;
    EXPECT_NE(rest.output.find("written by 2 ranks"), std::string::npos) << rest.output;
    EXPECT_EQ(rest.output.find("warning"), std::string::npos) << rest.output;
    EXPECT_EQ(rest.losses, std::vector<double>(reference_->losses.begin() + 3, reference_->losses.end()))
        << ranks << " ranks";
    EXPECT_TRUE(rest.weights == reference_->weights)
        << "resumed on " << ranks << " ranks: weights differ from the uninterrupted run's";
  }
}

TEST_F(ZeroTraining, KillingOneRankEndsTheJobNamingTheRankAndTheLastCheckpointResumes) {
  const std::string name = "killed", trace = *dir_ / "killed/trace";
  const std::vector<std::string> argv =
      command(2, name, {"--checkpoint-dir", *dir_ / "killed/ckpt", "--checkpoint-every", "1"});
  test::Child job(argv, {"MLPO_TRACE_PHASES=" + trace}, *dir_ / "killed/output.txt");

  // Rank 1 writes its pid first; wait until it has begun step 3 (checkpoints 1 and 2 exist).
  const auto deadline = Clock::now() + std::chrono::seconds(90);
  while (!job.exited() && test::read_file(trace + ".rank1").find("step-begin 3") == std::string::npos &&
         Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_FALSE(job.exited()) << "the job ended before it could be killed:\n"
                             << test::read_file(*dir_ / "killed/output.txt");
  const std::string rank1 = test::read_file(trace + ".rank1");
  ASSERT_EQ(rank1.rfind("pid ", 0), 0u) << rank1;
  const pid_t pid = static_cast<pid_t>(std::stol(rank1.substr(4)));
  const auto killed_at = Clock::now();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  while (!job.exited() && Clock::now() < killed_at + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
  ASSERT_TRUE(job.exited()) << "the job still runs 60 s after one rank was killed";
  const std::string output = test::read_file(*dir_ / "killed/output.txt");
  EXPECT_LT(seconds, 30.0) << output;
  EXPECT_NE(exit_code(job.status()), 0) << output;
  EXPECT_NE(exit_code(job.status()), 124) << "ended by the test's timeout, not by mpirun:\n" << output;
  // mpirun names the rank that died and how.
  EXPECT_NE(output.find("process rank 1"), std::string::npos) << output;
  EXPECT_NE(output.find("signal 9"), std::string::npos) << output;
  const std::string latest = test::read_file(*dir_ / "killed/ckpt/latest");
  EXPECT_TRUE(latest == "ckpt-2\n" || latest == "ckpt-3\n") << latest;

  // The last checkpoint resumes and the run ends as if never interrupted.
  const JobOutcome resumed = run_job(
      2, "killed", {"--checkpoint-dir", *dir_ / "killed/ckpt", "--checkpoint-every", "1", "--resume"});
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;
  EXPECT_TRUE(resumed.weights == reference_->weights)
      << "resumed after the kill: weights differ from the uninterrupted run's";
}

// The Hugging Face directory export gathers the ranks' shards as the single file does — here
// the fp32 master weights, subgroup by subgroup, cut into several shards — and --init-from
// loads each rank's range of it: 2 ranks give one process's files and losses.
TEST_F(ZeroTraining, HfDirectoryExportAndInitFromOnTwoRanksMatchOneProcess) {
  auto exporting = [&](const std::string& name) {
    return std::vector<std::string>{"--export-dtype",       "fp32",
                                    "--export-shard-size",  "500KB",
                                    "--export-safetensors", *dir_ / name + "/hf"};
  };
  const JobOutcome one = run_job(0, "hf-one", exporting("hf-one"), 2);
  ASSERT_EQ(one.exit_status, 0) << one.output;
  const JobOutcome two = run_job(2, "hf-two", exporting("hf-two"), 2);
  ASSERT_EQ(two.exit_status, 0) << two.output;
  EXPECT_EQ(two.losses, one.losses);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(*dir_ / "hf-one/hf")) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(test::read_file(entry.path()) == test::read_file(*dir_ / "hf-two/hf/" + name))
        << name << " differs";
    ++files;
  }
  EXPECT_GT(files, 3u) << "config.json, the index and several shards";
  const JobOutcome init_one = run_job(0, "hf-init-one", {"--init-from", *dir_ / "hf-one/hf"}, 1);
  ASSERT_EQ(init_one.exit_status, 0) << init_one.output;
  const JobOutcome init_two = run_job(2, "hf-init-two", {"--init-from", *dir_ / "hf-one/hf"}, 1);
  ASSERT_EQ(init_two.exit_status, 0) << init_two.output;
  EXPECT_NE(init_two.output.find("init: weights from"), std::string::npos) << init_two.output;
  EXPECT_EQ(init_two.losses, init_one.losses);
  EXPECT_TRUE(init_two.weights == init_one.weights);
}

// 3 ranks: allowed (a 6-GPU node is a real shape), deterministic, but the ranks' blocks of
// micro-batches are not subtrees of one process's halving tree, and the run says so.
TEST_F(ZeroTraining, ThreeRanksRunAndSayTheyDifferFromOneProcessInTheLastBits) {
  const JobOutcome job = run_job(3, "ranks3", {}, 2);
  ASSERT_EQ(job.exit_status, 0) << job.output;
  EXPECT_EQ(job.losses.size(), 2u);
  EXPECT_NE(job.output.find("3 ranks is not a power of two"), std::string::npos) << job.output;
}

TEST_F(ZeroTraining, PlanForAnotherWorldShapeStopsEveryRankAtStart) {
  // A plan for one rank, launched on two.
  Plan plan = test::memory_plan(test::tiny_params());
  save_plan(plan, *dir_ / "one-rank-plan.json");
  const JobOutcome job = run_job(2, "mismatch", {"--plan", *dir_ / "one-rank-plan.json"});
  EXPECT_EQ(job.exit_status, 2) << job.output;
  EXPECT_NE(
      job.output.find(
          "plan cluster: the plan is for 1 node x 1 ranks per node = 1 ranks, but the job was launched as "
          "1 node x 2 ranks per node = 2 ranks"),
      std::string::npos)
      << job.output;
  EXPECT_FALSE(fs::exists(*dir_ / "mismatch/final.safetensors"));
}
#else
TEST_F(ZeroTraining, SkippedWithoutMpi) {}
#endif

}  // namespace
}  // namespace mlpo::train
