// The first hour with MLPO, as a new user meets it (issue 38): mistakes named with their fix,
// a default plan that fits on three lines, "will it fit?" in numbers, a plan made elsewhere
// run here, a graceful Ctrl-C, and the tuner's words for a CPU-only machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "tests/support/run_command.hpp"

namespace {

namespace fs = std::filesystem;
using mlpo::testing::run_command;

const std::string kRun = MLPO_RUN_BIN;
const std::string kTune = MLPO_TUNE_BIN;
const std::string kSource = MLPO_SOURCE_DIR;
const std::string kVm = kSource + "/profiles/data/dev-2core-vm.json";            // measured, no GPU
const std::string kNode = kSource + "/profiles/data/example-cluster-node.json";  // example, 4 GPUs

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

class FirstHour : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("mlpo-first-hour-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto r =
        run_command(kRun + " prepare-data --input " + kSource + "/README.md --out " + at("tokens.bin"));
    ASSERT_EQ(r.status, 0) << r.out;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  // A plan for `tiny` tuned on the dev VM's profile (tiers disk and shm, paths of that VM).
  std::string tuned_plan() const {
    const auto r =
        run_command(kTune + " --model tiny --profile " + kVm + " --quiet --out " + at("plan.json"));
    EXPECT_EQ(r.status, 0) << r.out;
    return at("plan.json");
  }
  // --tier-path NAME=DIR for each of the plan's tiers, to fresh directories here.
  std::string tier_paths(const std::string& plan) const {
    std::string flags;
    for (const auto& t : mlpo::load_plan(plan).tiers) {
      fs::create_directories(dir_ / ("tier-" + t.name));
      flags += " --tier-path " + t.name + "=" + at("tier-" + t.name);
    }
    return flags;
  }
  fs::path dir_;
};

TEST_F(FirstHour, AMisspelledFlagIsNamedFirstWithItsLikelyIntent) {
  // Before: "The following arguments were not expected: tiny --modle".
  auto r = run_command(kRun + " --modle tiny");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_TRUE(has(r.out, "mlpo-run: error: unknown flag '--modle' (did you mean '--model'?)")) << r.out;
  r = run_command(kTune + " --model tiny --gpus-per-nod 4 --describe");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.out, "unknown flag '--gpus-per-nod' (did you mean '--gpus-per-node'?)")) << r.out;
}

TEST_F(FirstHour, PresetsInAnyCaseAndMisspelledOnesNamed) {
  EXPECT_EQ(run_command(kTune + " --model LLaMA2-7B --describe").status, 0);
  const auto r = run_command(kTune + " --model lama2-7b --describe");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.out, "(did you mean 'llama2-7b'?)")) << r.out;
}

TEST_F(FirstHour, ASizeWithoutAUnitIsRefused) {
  // Before: --host-memory-budget 400 meant 400 bytes.
  const auto r = run_command(kTune + " --model tiny --profile " + kVm + " --host-memory-budget 400");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.out, "--host-memory-budget: needs a unit: '400' would be 400 bytes")) << r.out;
}

TEST_F(FirstHour, RawTextAsDataPointsToPrepareData) {
  const auto r = run_command(kRun + " --model tiny --data " + kSource + "/README.md --steps 1 --state-dir " +
                             at("state"));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.out, "looks like text, not tokens; tokenize it first: mlpo-run prepare-data --input"))
      << r.out;
}

TEST_F(FirstHour, TheDefaultPlanIsThreeLinesAndCanBeSaved) {
  const auto r = run_command(kRun + " --model tiny --data " + at("tokens.bin") + " --steps 2 --state-dir " +
                             at("state") + " --save-plan " + at("default-plan.json") +
                             " --export-safetensors " + at("export/"));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto plan_lines = lines_starting(r.out, "plan:");
  EXPECT_EQ(plan_lines.size(), 4u) << r.out;                 // three lines and "written to"
  EXPECT_TRUE(lines_starting(r.out, "{").empty()) << r.out;  // before: the plan as one JSON line
  EXPECT_EQ(mlpo::load_plan(at("default-plan.json")).tiers.at(0).path, at("state"));
  // A 10 MiB initial state is one line, not ten progress lines.
  EXPECT_EQ(lines_starting(r.out, "init:").size(), 1u) << r.out;
  // The export says what it wrote, and that a byte-level model carries no tokenizer.
  EXPECT_TRUE(
      has(r.out, "export: " + at("export/") + " (Hugging Face directory: config.json, model.safetensors; "))
      << r.out;
  EXPECT_TRUE(has(r.out, "no tokenizer: the model is byte-level")) << r.out;
}

TEST_F(FirstHour, APlanMadeElsewhereRunsHereWithTierPaths) {
  const std::string plan = tuned_plan();
  // Its tiers are the dev VM's directories; --tier-path puts them here.
  auto r = run_command(kRun + " --model tiny --plan " + plan + tier_paths(plan) + " --data " +
                       at("tokens.bin") + " --steps 1 --quiet");
  EXPECT_EQ(r.status, 0) << r.out;
  r = run_command(kRun + " --model tiny --plan " + plan + " --tier-path dsk=" + at("tier-disk") + " --data " +
                  at("tokens.bin") + " --steps 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.out, "the plan has no tier 'dsk' (did you mean 'disk'?)")) << r.out;
  r = run_command(kTune + " --simulate " + plan + " --profile " + kVm + tier_paths(plan));
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(FirstHour, APlanTunedForAnotherShapeWarnsThatItsPredictionNoLongerApplies) {
  const std::string plan = tuned_plan();
  const auto r = run_command(kRun + " --model tiny --plan " + plan + tier_paths(plan) + " --data " +
                             at("tokens.bin") + " --steps 1 --micro-batch 2 --quiet");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "warning: the plan was tuned for another shape: --micro-batch 2 (the plan's 1)"))
      << r.out;
}

TEST_F(FirstHour, CtrlCFinishesTheStepAndNamesTheCheckpointToResumeFrom) {
  // Before: exit 130 and nothing said. Interrupt once step 30 is printed (checkpoints every 20).
  const std::string out = at("out.txt");
  const std::string train = kRun + " --model tiny --data " + at("tokens.bin") +
                            " --steps 100000 --state-dir " + at("state") + " --checkpoint-dir " + at("ckpt") +
                            " --checkpoint-every 20";
  const auto r = run_command("(" + train + " > " + out + " 2>&1 & pid=$!; until grep -q 'step 30/' " + out +
                             "; do sleep 0.05; done; kill -INT $pid; wait $pid; echo status=$?)");
  EXPECT_TRUE(has(r.out, "status=130")) << r.out;
  std::string printed;
  {
    std::ifstream in(out);
    printed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_TRUE(has(printed, "mlpo-run: interrupt: finishing the step in progress")) << printed;
  const auto last = lines_starting(printed, "mlpo-run: interrupted after step ");
  ASSERT_EQ(last.size(), 1u) << printed;
  EXPECT_TRUE(has(last[0], "; the last checkpoint is " + at("ckpt") + "/ckpt-")) << last[0];
  EXPECT_TRUE(has(last[0], "; resume with: " + train + " --resume")) << last[0];
  // The command it names continues the run (to a nearer end).
  const auto resumed =
      run_command(kRun + " --model tiny --data " + at("tokens.bin") + " --steps 45 --state-dir " +
                  at("state") + " --checkpoint-dir " + at("ckpt") + " --checkpoint-every 20 --resume");
  EXPECT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_TRUE(has(resumed.out, "resume: continuing from")) << resumed.out;
}

TEST_F(FirstHour, TheSearchSaysWhatThePlanUsesAndItsTokensPerSecond) {
  const auto plain = run_command(kTune + " --model tiny --profile " + kVm);
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_TRUE(has(plain.out, "uses: host memory ")) << plain.out;
  EXPECT_TRUE(has(plain.out, " per node (with the CPU backend's model: no GPU); tier ")) << plain.out;
  EXPECT_TRUE(has(plain.out, "predicted throughput: ")) << plain.out;
  // What was counted, not "N candidates of the grid's M" with N > M.
  EXPECT_FALSE(has(plain.out, "of the grid's")) << plain.out;
  // The same search counted alike with --explain and --timeline (the time aside); before, the
  // timeline's re-run of the chosen plan counted as one more SimGrid run.
  const auto explained =
      run_command(kTune + " --model tiny --profile " + kVm + " --explain --timeline " + at("timeline.svg"));
  ASSERT_EQ(explained.status, 0) << explained.out;
  auto counts = [](const std::string& text) {
    const auto line = lines_starting(text, "search: ");
    return line.empty() ? std::string("none") : line[0].substr(0, line[0].rfind(';'));
  };
  EXPECT_EQ(counts(plain.out), counts(explained.out));
  EXPECT_TRUE(has(explained.out, "predicted throughput: ")) << explained.out;
  // A CPU-only machine in CPU words: no GPU to copy weights to.
  EXPECT_FALSE(has(explained.out, "weights to GPU")) << explained.out;
}

TEST_F(FirstHour, NoGpuIsANoteAndAProfileMadeHereKeepsItsNotesToItself) {
  fs::create_directories(dir_ / "scratch");
  auto r =
      run_command(std::string(MLPO_PROFILE_BIN) +
                  " --quick --model tiny --seq-len 64 --tier-size 8MiB --host-size 8MiB --streams 1 --reps 1"
                  " --tier scratch=" +
                  at("scratch") + " --out " + at("profile.json"));
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_command(kTune + " --model tiny --profile " + at("profile.json") + " --seq-len 64");
  ASSERT_EQ(r.status, 0) << r.out;
  // No GPU is how this machine is, not something wrong with it: a note (before: a warning on
  // every CPU run), gone with --quiet.
  EXPECT_TRUE(has(r.out, "mlpo-tune: note: profile has no GPU")) << r.out;
  EXPECT_FALSE(has(r.out, "warning:")) << r.out;
  EXPECT_FALSE(has(r.out, "note: profile " + at("profile.json"))) << r.out;  // measured here: no notes shown
  r = run_command(kTune + " --model tiny --profile " + at("profile.json") + " --seq-len 64 --quiet");
  EXPECT_FALSE(has(r.out, "note:")) << r.out;
}

TEST_F(FirstHour, SimulateSpeaksOfRanksOnACpuMachineAndLabelsSums) {
  const std::string plan = tuned_plan();
  auto r = run_command(kTune + " --simulate " + plan + " --profile " + kVm);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "cluster: 1 node x 1 rank (CPU backend, no GPU)")) << r.out;
  EXPECT_FALSE(has(r.out, "GPUs")) << r.out;
  EXPECT_TRUE(has(r.out, "fits host memory (the CPU backend's model included) and tier capacity")) << r.out;
  EXPECT_TRUE(has(r.out, "uses: host memory ")) << r.out;
  r = run_command(kTune + " --simulate " + plan + " --profile " + kVm + " --gpus-per-node 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "1 node x 2 ranks (CPU backend, no GPU)")) << r.out;
  // The plan's disk tier streams; its slot wait is the two ranks' together (before: "slot wait").
  EXPECT_TRUE(has(r.out, "slot wait (summed over 2 ranks)")) << r.out;
}

TEST_F(FirstHour, AGpuProfilePlansForAllItsGpusAndShowsItsNotes) {
  // Before: --gpus-per-node defaulted to 1, and llama2-70b on one 80 GiB GPU failed with a GPU
  // memory shortfall instead of planning the node's 4 GPUs.
  const auto r = run_command(kTune + " --model llama2-70b --profile " + kNode);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "mlpo-tune: note: profile " + kNode + ": EXAMPLE, NOT MEASURED")) << r.out;
  EXPECT_TRUE(has(r.out, " per GPU; tier ")) << r.out;
  const auto one = run_command(kTune + " --model llama2-70b --profile " + kNode + " --gpus-per-node 1");
  EXPECT_EQ(one.status, 2) << one.out;
  EXPECT_TRUE(has(one.out, "GPU memory is short")) << one.out;
}

}  // namespace
