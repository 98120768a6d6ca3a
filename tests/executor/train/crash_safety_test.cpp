// Crash safety: mlpo-run is killed with SIGKILL at many moments — at random delays, and right
// inside the update phase (tier files half rewritten) and inside a checkpoint write — and
// restarted with --resume each time; before some restarts `latest` is removed, before others
// one byte of the checkpoint to resume from is flipped. Every restart must resume from the
// last complete checkpoint (the newest one without `latest`), every flipped byte must stop the
// restart with exit 2 naming the file, and every chain of kills and restarts must end with
// exactly the weights, optimizer state and run log of a run that was never interrupted.
//
// The randomness is seeded from the clock and printed; MLPO_CRASH_SEED=<seed> replays a run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "executor/checkpoint/checkpoint_directory.hpp"
#include "tests/executor/train/process_util.hpp"
#include "tests/executor/train/train_test_util.hpp"

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

// (step, loss) of each line of a run log.
std::vector<std::pair<std::int64_t, double>> logged_losses(const std::string& path) {
  std::vector<std::pair<std::int64_t, double>> out;
  const std::string text = test::read_file(path);
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t nl = text.find('\n', begin);
    const Json rec = Json::parse(text.substr(begin, nl - begin));
    out.emplace_back(rec["step"].get<std::int64_t>(), rec["loss"].get<double>());
    begin = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

const char* const kCheckedFiles[] = {"manifest.json", "model.safetensors", "optimizer.rank0.p.f32",
                                     "optimizer.rank0.m.f32", "optimizer.rank0.v.f32"};

TEST(CrashSafety, RandomKillsMissingLatestAndFlippedBytesEndExactlyAsTheUninterruptedRun) {
  const char* replay = std::getenv("MLPO_CRASH_SEED");
  const auto seed =
      replay ? static_cast<std::uint32_t>(std::strtoul(replay, nullptr, 10))
             : static_cast<std::uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::printf("crash safety: seed %u (replay with MLPO_CRASH_SEED=%u)\n", seed, seed);
  SCOPED_TRACE("MLPO_CRASH_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  auto chance = [&](int one_in) { return std::uniform_int_distribution<int>(0, one_in - 1)(rng) == 0; };

  TempDir dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  const std::string data = test::make_token_file(dir);
  const std::int64_t params = test::tiny_params();
  save_plan(test::two_tier_plan(params, dir / "a", dir / "b"), dir / "plan.json");
  auto args = [&](const std::string& run_dir) {
    return std::vector<std::string>{MLPO_RUN_BIN,
                                    "--model",
                                    "tiny",
                                    "--seq-len",
                                    "32",
                                    "--micro-batch",
                                    "2",
                                    "--data",
                                    data,
                                    "--plan",
                                    dir / "plan.json",
                                    "--steps",
                                    "12",
                                    "--seed",
                                    "5",
                                    "--warmup-steps",
                                    "2",
                                    "--threads",
                                    "2",
                                    "--blas-threads",
                                    "1",
                                    "--quiet",
                                    "--checkpoint-dir",
                                    run_dir + "/ckpt",
                                    "--checkpoint-every",
                                    "1",
                                    "--resume",
                                    "--log",
                                    run_dir + "/run.jsonl",
                                    "--export-safetensors",
                                    run_dir + "/final.safetensors"};
  };
  // The checkpoint pause widens the mid-checkpoint window (15 ms after each of its 4 files).
  const std::vector<std::string> env = {"MLPO_TEST_SLOW_CHECKPOINT_MS=15"};

  fs::create_directories(dir / "reference");
  const auto t0 = Clock::now();
  ASSERT_EQ(test::run_to_end(args(dir / "reference"), dir / "reference/out.txt", env), 0)
      << test::read_file(dir / "reference/out.txt");
  const double full_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string reference = test::read_file(dir / "reference/final.safetensors");
  ASSERT_FALSE(reference.empty());
  const auto reference_log = logged_losses(dir / "reference/run.jsonl");
  ASSERT_EQ(reference_log.size(), 12u);

  int kills = 0, mid_update = 0, mid_checkpoint = 0, chains = 0, attempts = 0, no_latest = 0, flips = 0;
  while (kills < 16) {
    const std::string run_dir = dir / ("chain" + std::to_string(chains++));
    const std::string ckpt = run_dir + "/ckpt";
    fs::create_directories(run_dir);
    for (;;) {
      ASSERT_LT(attempts, 200) << "the runs make no progress";
      const std::string tag = std::to_string(attempts++);
      const std::string trace = run_dir + "/trace" + tag, output = run_dir + "/out" + tag;
      bool latest_removed = false;
      if (fs::exists(ckpt + "/latest") && chance(4)) {
        fs::remove(ckpt + "/latest");
        latest_removed = true;
        ++no_latest;
      }
      // The checkpoint the restart must resume from: the one `latest` names, else the newest.
      const auto complete = checkpoint::complete_checkpoints(ckpt);
      const auto latest = checkpoint::read_latest(ckpt);
      const std::int64_t resume_step = latest             ? *checkpoint::checkpoint_step(*latest)
                                       : complete.empty() ? 0
                                                          : complete.front();

      // One flipped byte in a file the restart reads: it must stop with exit 2 naming the file,
      // having resumed nothing; then the byte is restored and the chain goes on.
      if (resume_step > 0 && chance(5)) {
        const std::string file = ckpt + "/ckpt-" + std::to_string(resume_step) + "/" +
                                 kCheckedFiles[std::uniform_int_distribution<int>(0, 4)(rng)];
        const std::string good = test::read_file(file);
        ASSERT_FALSE(good.empty()) << file;
        std::string bad = good;
        const std::size_t at = std::uniform_int_distribution<std::size_t>(0, bad.size() - 1)(rng);
        bad[at] = static_cast<char>(bad[at] ^ std::uniform_int_distribution<int>(1, 255)(rng));
        test::write_file(file, bad);
        const std::vector<std::string> trace_env = {env[0], "MLPO_TRACE_PHASES=" + trace};
        EXPECT_EQ(test::run_to_end(args(run_dir), output, trace_env), 2) << file << " byte " << at << ":\n"
                                                                         << test::read_file(output);
        EXPECT_NE(test::read_file(output).find(file), std::string::npos)
            << "the error does not name " << file << ":\n"
            << test::read_file(output);
        EXPECT_EQ(first_line(trace), "") << "a run resumed from a checkpoint with a flipped byte in " << file;
        EXPECT_EQ(checkpoint::complete_checkpoints(ckpt), complete)
            << "the failed restart changed the checkpoints";
        test::write_file(file, good);
        ++flips;
        continue;
      }

      std::vector<std::string> child_env = env;
      child_env.push_back("MLPO_TRACE_PHASES=" + trace);
      test::Child child(args(run_dir), child_env, output);
      // Every fourth attempt waits for the update phase, every fourth for a checkpoint write;
      // the others kill at a random moment of the run.
      const int kind = attempts % 4;
      if (kind < 2) {
        const std::string phase = kind == 0 ? "update-begin" : "checkpoint-begin";
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (!child.exited() && last_line(trace).rfind(phase, 0) != 0 && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::microseconds(300));
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
      } else {
        std::this_thread::sleep_for(
            std::chrono::duration<double>(std::uniform_real_distribution<double>(0.0, 0.7 * full_s)(rng)));
      }
      if (!child.exited()) {
        child.kill9();
        child.wait();
      }
      const int st = child.status();
      const std::string started = first_line(trace);
      if (!started.empty()) {
        EXPECT_EQ(started, "started " + std::to_string(resume_step))
            << "did not resume from the last complete checkpoint";
        if (latest_removed && resume_step > 0) {
          EXPECT_NE(test::read_file(output).find(
                        "latest is missing; resuming from the newest complete checkpoint ckpt-" +
                        std::to_string(resume_step)),
                    std::string::npos)
              << "the fallback was not announced:\n"
              << test::read_file(output);
        }
      }
      if (WIFEXITED(st)) {
        ASSERT_EQ(WEXITSTATUS(st), 0) << test::read_file(output);
        EXPECT_TRUE(test::read_file(run_dir + "/final.safetensors") == reference)
            << "chain " << chains - 1 << ": weights differ from the uninterrupted run's";
        for (const std::string f : kCheckedFiles) {
          if (f == "manifest.json")
            continue;  // its settings hold nothing run-specific, but compare the state itself
          EXPECT_TRUE(test::read_file(ckpt + "/ckpt-12/" + f) ==
                      test::read_file(dir / ("reference/ckpt/ckpt-12/" + f)))
              << "chain " << chains - 1 << ": " << f << " differs from the uninterrupted run's";
        }
        EXPECT_EQ(logged_losses(run_dir + "/run.jsonl"), reference_log)
            << "chain " << chains - 1 << ": the run log differs";
        break;
      }
      ASSERT_EQ(WTERMSIG(st), SIGKILL);
      ++kills;
      const std::string at = last_line(trace);
      mid_update += at.rfind("update-begin", 0) == 0;
      mid_checkpoint += at.rfind("checkpoint-begin", 0) == 0;
    }
  }
  std::printf(
      "crash safety: %d kills (%d mid-update, %d mid-checkpoint) over %d chains, %d runs, %d without latest, "
      "%d flipped bytes detected; uninterrupted run %.2f s\n",
      kills, mid_update, mid_checkpoint, chains, attempts, no_latest, flips, full_s);
  EXPECT_GE(mid_update, 2);
  EXPECT_GE(mid_checkpoint, 2);
}

}  // namespace
}  // namespace mlpo::train
