// Crash safety: mlpo-run is killed with SIGKILL at many moments — at random delays, and right
// inside the update phase (tier files half rewritten) and inside a checkpoint write — and
// restarted with --resume each time. Every restart must resume from the last complete
// checkpoint, and every chain of kills and restarts must end with exactly the weights of a run
// that was never interrupted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "core/plan.hpp"
#include "executor/model/parameter_layout.hpp"
#include "tests/train/process_util.hpp"
#include "tests/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test::TempDir;

std::string last_line(const std::string& path) {
  std::string text = test::read_file(path);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

std::string first_line(const std::string& path) {
  const std::string text = test::read_file(path);
  return text.substr(0, text.find('\n'));
}

TEST(CrashSafety, ResumeAfterSigkillAtAnyMomentEndsWithTheUninterruptedWeights) {
  TempDir dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  const std::string data = test::make_token_file(dir);
  const std::int64_t params = ParameterLayout(ModelShape{256, 128, 4, 4, 2, 384, 32}).total();
  save_plan(test::two_tier_plan(params, dir / "a", dir / "b"), dir / "plan.json");
  auto args = [&](const std::string& run_dir) {
    return std::vector<std::string>{MLPO_RUN_BIN, "--model", "tiny", "--seq-len", "32", "--micro-batch", "2",
                                    "--data", data, "--plan", dir / "plan.json", "--steps", "12", "--seed", "5",
                                    "--warmup-steps", "2", "--threads", "2", "--blas-threads", "1", "--quiet",
                                    "--checkpoint-dir", run_dir + "/ckpt", "--checkpoint-every", "1", "--resume",
                                    "--export-safetensors", run_dir + "/final.safetensors"};
  };
  // The checkpoint pause widens the mid-checkpoint window (15 ms after each of its 4 files).
  const std::vector<std::string> env = {"MLPO_TEST_SLOW_CHECKPOINT_MS=15"};

  fs::create_directories(dir / "reference");
  const auto t0 = Clock::now();
  ASSERT_EQ(test::run_to_end(args(dir / "reference"), dir / "reference/out.txt", env), 0) << test::read_file(dir / "reference/out.txt");
  const double full_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string reference = test::read_file(dir / "reference/final.safetensors");
  ASSERT_FALSE(reference.empty());

  std::mt19937 rng(20240520);
  int kills = 0, mid_update = 0, mid_checkpoint = 0, chains = 0, attempts = 0;
  while (kills < 24) {
    const std::string run_dir = dir / ("chain" + std::to_string(chains++));
    fs::create_directories(run_dir);
    for (;;) {
      ASSERT_LT(attempts, 200) << "the runs make no progress";
      const std::string tag = std::to_string(attempts);
      const std::string trace = run_dir + "/trace" + tag, output = run_dir + "/out" + tag;
      const std::string latest = test::read_file(run_dir + "/ckpt/latest");
      const std::string resume_step = latest.empty() ? "0" : latest.substr(5, latest.size() - 6);
      std::vector<std::string> child_env = env;
      child_env.push_back("MLPO_TRACE_PHASES=" + trace);
      test::Child child(args(run_dir), child_env, output);

      // Every fourth attempt waits for the update phase, every fourth for a checkpoint write;
      // the others kill at a random moment of the run.
      const int kind = attempts++ % 4;
      if (kind < 2) {
        const std::string phase = kind == 0 ? "update-begin" : "checkpoint-begin";
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (!child.exited() && last_line(trace).rfind(phase, 0) != 0 && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(300));
        std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(std::uniform_real_distribution<double>(0.0, 0.7 * full_s)(rng)));
      }
      if (!child.exited()) {
        child.kill9();
        child.wait();
      }
      const int st = child.status();
      const std::string started = first_line(trace);
      if (!started.empty()) {
        EXPECT_EQ(started, "started " + resume_step) << "did not resume from the last complete checkpoint";
      }
      if (WIFEXITED(st)) {
        ASSERT_EQ(WEXITSTATUS(st), 0) << test::read_file(output);
        EXPECT_TRUE(test::read_file(run_dir + "/final.safetensors") == reference)
            << "chain " << chains - 1 << ": weights differ from the uninterrupted run's";
        break;
      }
      ASSERT_EQ(WTERMSIG(st), SIGKILL);
      ++kills;
      const std::string at = last_line(trace);
      mid_update += at.rfind("update-begin", 0) == 0;
      mid_checkpoint += at.rfind("checkpoint-begin", 0) == 0;
    }
  }
  std::printf("crash safety: %d kills (%d mid-update, %d mid-checkpoint) over %d chains, %d runs; uninterrupted run %.2f s\n",
              kills, mid_update, mid_checkpoint, chains, attempts, full_s);
  EXPECT_GE(kills, 20);
  EXPECT_GE(mid_update, 2);
  EXPECT_GE(mid_checkpoint, 2);
}

}  // namespace
}  // namespace mlpo::train
