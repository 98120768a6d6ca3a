// The command-line contract: --help and --version exit 0, bad usage and invalid input exit 2
// with a one-line message, and --describe --json is machine-readable.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "tests/support/run_command.hpp"

namespace {

using Result = mlpo::testing::CommandResult;

Result run(const std::string& command) { return mlpo::testing::run_command(command); }

const std::string kTune = MLPO_TUNE_BIN;

// Writes `text` to the file at `path`; false when it cannot be opened.
bool write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return true;
}

// The first `n` bytes of the file at `path` (fewer if it is shorter); nullopt when it cannot
// be opened.
std::optional<std::string> first_bytes(const std::string& path, std::size_t n) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return std::nullopt;
  std::string bytes(n, '\0');
  bytes.resize(std::fread(bytes.data(), 1, n, f));
  std::fclose(f);
  return bytes;
}

}  // namespace

TEST(CliContract, HelpAndVersionExitZero) {
  for (const std::string bin : {MLPO_TUNE_BIN, MLPO_PROFILE_BIN, MLPO_RUN_BIN}) {
    Result help = run(bin + " --help");
    EXPECT_EQ(help.status, 0) << bin;
    EXPECT_NE(help.out.find("Usage"), std::string::npos) << help.out;
    Result version = run(bin + " --version");
    EXPECT_EQ(version.status, 0) << bin;
    EXPECT_NE(version.out.find("0."), std::string::npos) << version.out;
  }
}

TEST(CliContract, UnknownOptionExitsTwoWithOneLine) {
  for (const std::string bin : {MLPO_TUNE_BIN, MLPO_PROFILE_BIN, MLPO_RUN_BIN}) {
    Result r = run(bin + " --no-such-option");
    EXPECT_EQ(r.status, 2) << bin << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

TEST(TuneDescribe, JsonCarriesExactParameterCount) {
  Result r = run(kTune + " --model llama2-70b --describe --json");
  ASSERT_EQ(r.status, 0) << r.out;
  mlpo::Json j = mlpo::Json::parse(r.out);
  EXPECT_EQ(j["params"].get<std::int64_t>(), 68976648192);
}

TEST(TuneDescribe, UnknownPresetExitsTwo) {
  Result r = run(kTune + " --model llama9 --describe");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown model preset 'llama9'"), std::string::npos) << r.out;
}

TEST(TuneDescribe, MalformedModelFileExitsTwoNamingField) {
  std::string path = ::testing::TempDir() + "/mlpo-bad-model.json";
  ASSERT_TRUE(write_text(path, R"({"schema":"mlpo.model/1","vocab":256,"hidden":-3,"layers":2,"heads":2,)"
                               R"("kv_heads":2,"ffn_hidden":8,"seq_len":8})"));
  Result r = run(kTune + " --model " + path + " --describe");
  std::remove(path.c_str());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("hidden: must be between"), std::string::npos) << r.out;
}

TEST(TuneDescribe, ZeroNodesIsBadUsage) {
  Result r = run(kTune + " --model tiny --describe --nodes 0");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--nodes"), std::string::npos) << r.out;
}

namespace {

const std::string kExampleProfile = std::string(MLPO_SOURCE_DIR) + "/profiles/data/example-cluster-node.json";

// mlpo-tune's update-only pick for 1b on the example node with 12 GiB of host memory, written
// to `plan`.
Result tune_1b_update_only(const std::string& plan) {
  return run(kTune + " --model 1b --profile " + kExampleProfile +
             " --host-memory-budget 12GiB --simulate-top 2 --update-only --quiet --out " + plan);
}

}  // namespace

TEST(TuneSearch, WritesAPlanWithPredictionAndBaselineAndExplains) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-plan.json";
  const std::string svg = ::testing::TempDir() + "/mlpo-cli-timeline.svg";
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile +
                 " --gpus-per-node 2 --host-memory-budget 12GiB --simulate-top 3" + " --explain --out " +
                 plan + " --timeline " + svg);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("what each principle saves"), std::string::npos) << r.out;
  mlpo::Json j = mlpo::read_json_file(plan, "plan");
  EXPECT_EQ(j["schema"], "mlpo.plan/1");
  EXPECT_GT(j["prediction"]["iteration_s"].get<double>(), 0);
  EXPECT_GT(j["baseline_prediction"]["iteration_s"].get<double>(),
            j["prediction"]["iteration_s"].get<double>());
  const std::optional<std::string> head = first_bytes(svg, 4);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(*head, "<svg");
  std::remove(plan.c_str());
  std::remove(svg.c_str());
}

TEST(TuneSearch, TooLittleHostMemoryExitsTwoSayingByHowMuch) {
  Result r = run(kTune + " --model llama2-70b --profile " + kExampleProfile + " --host-memory-budget 8GiB");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("host memory is short by"), std::string::npos) << r.out;
}

TEST(TuneSearch, WithoutProfileExitsTwo) {
  Result r = run(kTune + " --model 1b");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--profile is required"), std::string::npos) << r.out;
}

TEST(TuneValidate, PrintsPredictedVersusMeasuredWithError) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-vplan.json";
  Result t = tune_1b_update_only(plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string log = ::testing::TempDir() + "/mlpo-cli-run.jsonl";
  ASSERT_TRUE(write_text(
      log,
      "{\"step\":0,\"update_s\":50,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n"
      "{\"step\":1,\"update_s\":5,\"forward_s\":0,\"backward_s\":0,\"tiers\":[],\"new_field\":true}\n"));
  Result r = run(kTune + " --validate " + log + " --plan " + plan + " --profile " + kExampleProfile);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("update_s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 averaged"), std::string::npos) << r.out;
  std::remove(plan.c_str());
  std::remove(log.c_str());
}

TEST(TuneSimulate, PrintsTheBreakdownOfTheGivenPlanAndItsJson) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-splan.json";
  Result t = tune_1b_update_only(plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string svg = ::testing::TempDir() + "/mlpo-cli-sim.svg";
  Result r = run(kTune + " --simulate " + plan + " --profile " + kExampleProfile +
                 " --update-only --host-memory-budget 12GiB --timeline " + svg);
  EXPECT_EQ(r.status, 0) << r.out;
  const std::optional<std::string> head = first_bytes(svg, 4);
  ASSERT_TRUE(head.has_value()) << r.out;
  EXPECT_EQ(*head, "<svg") << *head;
  std::remove(svg.c_str());
  for (const char* part : {"predicted (SimGrid)", "bound per phase", "per tier"})
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out;
  // No error, and nothing of --validate's table (its "run log:" line, its "quantity" header);
  // the word "error" alone is no test: ASan builds print a SimGrid context-switch warning that contains it.
  EXPECT_EQ(r.out.find("mlpo-tune: error"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("run log:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("quantity"), std::string::npos) << r.out;
  Result j = run(kTune + " --simulate " + plan + " --profile " + kExampleProfile +
                 " --update-only --json --gpus-per-node 2");
  ASSERT_EQ(j.status, 0) << j.out;
  const mlpo::Json parsed = mlpo::Json::parse(j.out.substr(std::min(j.out.size(), j.out.find("{\n"))));
  EXPECT_EQ(parsed["schema"], "mlpo.simulation/1");
  EXPECT_EQ(parsed["cluster"]["gpus_per_node"], 2);  // the shape flag overrides the plan's
  std::remove(plan.c_str());
}

TEST(TuneValidate, JsonCarriesEveryRow) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-vjplan.json";
  Result t = tune_1b_update_only(plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string log = ::testing::TempDir() + "/mlpo-cli-vjrun.jsonl";
  ASSERT_TRUE(write_text(log,
                         "{\"step\":0,\"update_s\":50,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n"
                         "{\"step\":1,\"update_s\":5,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n"));
  Result r =
      run(kTune + " --validate " + log + " --plan " + plan + " --profile " + kExampleProfile + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const mlpo::Json parsed = mlpo::Json::parse(r.out.substr(std::min(r.out.size(), r.out.find("{\n"))));
  EXPECT_EQ(parsed["schema"], "mlpo.validation/1");
  EXPECT_EQ(parsed["steps_used"], 1);
  bool update = false;
  for (const auto& row : parsed["rows"]) update |= row["quantity"] == "update_s" && row["measured"] == 5.0;
  EXPECT_TRUE(update) << r.out;
  std::remove(plan.c_str());
  std::remove(log.c_str());
}

TEST(TuneSearch, UnknownBaselineTierExitsTwoListingTheTiers) {
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile +
                 " --baseline-tier floppy --update-only --quiet");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--baseline-tier floppy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvme"), std::string::npos) << r.out;
}

// ---- Input validation (issue #19): every numeric flag, every mode, model sizes, paths -------

namespace {

const std::string kRun = MLPO_RUN_BIN;
const std::string kProfile = MLPO_PROFILE_BIN;

// Every invocation below must fail at validation; `timeout` turns one that would block or do
// real work into a failure instead of a hang.
Result run_bounded(const std::string& command) { return run("timeout -k 2 20 " + command); }

long lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// A scratch file with `text`, removed at the end of the test.
class ScratchFile {
 public:
  ScratchFile(const std::string& name, const std::string& text)
      : path_(::testing::TempDir() + "/mlpo-cli-" + name) {
    write_text(path_, text);
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct BadNumber {
  std::string command;  // binary and the arguments before the flag
  std::string flag;
  std::vector<std::string> values;
};

}  // namespace

// Each bad value of each numeric flag of the three commands is refused at parse time, before
// anything is loaded, with one line naming the flag (mlpo-profile gets an --out whose directory
// is missing, so a value that slipped through fails there instead of profiling).
TEST(CliNumbers, EveryNumericFlagRefusesNanInfinityNegativeAndZeroWhereMeaningless) {
  const std::string run_update = kRun + " --update-only --params 1M";
  const std::string profile = kProfile + " --out /nonexistent-mlpo-dir/p.json";
  const std::vector<BadNumber> cases = {
      {kRun, "--steps", {"0", "-1", "nan", "1.5", "1e3"}},
      {kRun, "--seed", {"-1", "nan", "1.5"}},
      {kRun, "--lr", {"nan", "inf", "-inf", "-1", "0", "1e-50", "3x"}},
      {run_update, "--lr", {"nan", "inf", "-1"}},
      {kRun, "--max-grad-norm", {"nan", "inf", "-1"}},
      {run_update, "--max-grad-norm", {"nan", "-1"}},
      {run_update, "--seed", {"-1"}},
      {kRun, "--threads", {"0", "-1", "nan"}},
      {kRun, "--seq-len", {"1", "0", "nan"}},
      {kRun, "--micro-batch", {"0", "-1", "nan"}},
      {kRun, "--grad-accum", {"0", "-1"}},
      {kRun, "--min-lr", {"nan", "inf", "-1"}},
      {kRun, "--warmup-steps", {"-1", "nan"}},
      {kRun, "--lr-decay-steps", {"-1", "nan"}},
      {kRun, "--beta1", {"nan", "1", "-0.1", "inf", "0.9999999999"}},
      {kRun, "--beta2", {"nan", "1", "-0.1"}},
      {run_update, "--beta2", {"1"}},
      {kRun, "--eps", {"nan", "inf", "0", "-1", "1e-50"}},
      {kRun, "--weight-decay", {"nan", "inf", "-1"}},
      {kRun, "--checkpoint-every", {"-1", "nan"}},
      {kRun, "--blas-threads", {"0", "-1"}},
      {kRun, "--gpu-memory-limit", {"0", "-1", "nan"}},
      {kRun, "--host-memory-limit", {"0", "-1", "nan"}},
      {kRun, "--params", {"0", "-1", "nan", "inf"}},
      {kRun, "--ranks", {"0", "-1", "257"}},
      {kRun, "--token-bytes", {"3"}},
      {kRun, "--eval-every", {"-1", "nan"}},
      {kRun, "--eval-tokens", {"-1", "1.5"}},
      {kRun + " prepare-data --input x --out y", "--threads", {"0", "-1"}},
      {kTune, "--nodes", {"0", "-1", "nan"}},
      {kTune, "--gpus-per-node", {"0", "-1"}},
      {kTune, "--micro-batch", {"0", "nan"}},
      {kTune, "--seq-len", {"0", "-1"}},
      {kTune, "--grad-accum", {"0"}},
      {kTune, "--top", {"-1", "51", "nan"}},
      {kTune, "--jobs", {"0"}},
      {kTune, "--simulate-top", {"0"}},
      {kTune, "--remote-backbone-gbps", {"nan", "inf", "0", "-1"}},
      {kTune, "--host-memory-budget", {"0", "-1", "nan"}},
      {profile, "--micro-batch", {"0", "-1"}},
      {profile, "--seq-len", {"0", "-1"}},
      {profile, "--tier-size", {"0", "nan"}},
      {profile, "--streams", {"0", "65", "-1"}},
      {profile, "--block-size", {"0", "100", "nan"}},
      {profile, "--queue-depth", {"0"}},
      {profile, "--host-size", {"0"}},
      {profile, "--reps", {"0", "-1"}},
  };
  for (const BadNumber& c : cases) {
    for (const std::string& value : c.values) {
      const Result r = run_bounded(c.command + " " + c.flag + " " + value);
      EXPECT_EQ(r.status, 2) << c.command << " " << c.flag << " " << value << ": " << r.out;
      EXPECT_EQ(lines(r.out), 1) << c.flag << " " << value << ": " << r.out;
      EXPECT_NE(r.out.find(c.flag + ": "), std::string::npos) << c.flag << " " << value << ": " << r.out;
    }
  }
}

TEST(CliNumbers, HelpStatesTheRanges) {
  EXPECT_NE(run(kRun + " --help").out.find("--beta1 FLOAT:[0,1)"), std::string::npos);
  EXPECT_NE(run(kRun + " --help").out.find("--lr FLOAT:>0"), std::string::npos);
  EXPECT_NE(run(kProfile + " --help").out.find("--streams UINT:[1,64]"), std::string::npos)
      << run(kProfile + " --help").out;
}

struct IgnoredFlag {
  std::string command;
  std::string message;
};

// A flag that the chosen mode does not read is an error naming the mode, as is a flag given
// without the one it needs. Each command fails at validation: on the old code the plan file
// `{}` and the missing data file made them fail fast too (after ignoring the flag).
TEST(CliModes, FlagsTheModeIgnoresAreErrorsNamingTheMode) {
  const ScratchFile plan("empty-plan.json", "{}");
  const std::string update = kRun + " --update-only --params 1M --plan " + plan.path();
  const std::string train = kRun + " --model tiny --data /nonexistent-mlpo.bin";
  const std::vector<IgnoredFlag> cases = {
      {update + " --data x.bin", "--data: not used by --update-only; only training reads it"},
      {update + " --resume", "--resume: not used by --update-only"},
      {update + " --checkpoint-dir ckpt", "--checkpoint-dir: not used by --update-only"},
      {update + " --checkpoint-every 5", "--checkpoint-every: not used by --update-only"},
      {update + " --model tiny", "--model: not used by --update-only"},
      {update + " --export-safetensors w.safetensors", "--export-safetensors: not used by --update-only"},
      {update + " --backend cpu", "--backend: not used by --update-only"},
      {update + " --comm single", "--comm: not used by --update-only"},
      {update + " --min-lr 0", "--min-lr: not used by --update-only"},
      {update + " --micro-batch 2", "--micro-batch: not used by --update-only"},
      {update + " --state-dir s", "--state-dir: not used by --update-only"},
      {train + " --profile " + plan.path(), "--profile: not used by training"},
      {train + " --params 1M", "--params: not used by training"},
      {train + " --ranks 2", "--ranks: not used by training"},
      {train + " --state-hash", "--state-hash: not used by training"},
      {train + " --checkpoint-every 5", "--checkpoint-every: needs --checkpoint-dir"},
      {train + " --eval-every 5", "--eval-every: needs --eval-data"},
      {update + " --eval-data x.bin", "--eval-data: not used by --update-only"},
      {update + " --tokenizer t.model", "--tokenizer: not used by --update-only"},
      {train + " --resume", "--resume: needs --checkpoint-dir"},
      {train + " --mode baseline", "--mode baseline: needs --plan"},
      {train + " --plan " + plan.path() + " --state-dir s",
       "--state-dir: is the tier directory of the default plan"},
      {train + " --gpu-memory-limit 1GiB", "--gpu-memory-limit: limits GPU memory, but --backend is cpu"},
      {kRun + " --steps 5 prepare-data --input /nonexistent-mlpo --out t.bin",
       "--steps: not used by prepare-data"},
      {kRun + " --lr 1 report /nonexistent-mlpo.jsonl --out r.svg", "--lr: not used by report"},
      {update + " --weight-decay-on all", "--weight-decay-on: not used by --update-only"},
      {kTune + " --model tiny --describe --explain", "--explain: not used by --describe"},
      {kTune + " --simulate " + plan.path() + " --profile " + plan.path() + " --out p.json",
       "--out: not used by --simulate"},
      {kTune + " --simulate " + plan.path() + " --profile " + plan.path() + " --baseline-tier disk",
       "--baseline-tier: not used by --simulate"},
      {kTune + " --model tiny --plan " + plan.path(), "--plan: not used by the plan search"},
      {kTune + " --model tiny --describe --profile " + plan.path(), "--profile: not used by --describe"},
      {kTune + " --model tiny --describe --out p.json", "--out: not used by --describe"},
      {kTune + " --model tiny --describe --remote-backbone-gbps 5",
       "--remote-backbone-gbps: not used by --describe"},
      {kTune + " --model tiny --describe --update-only", "--update-only: not used by --describe"},
      {kTune + " --model tiny --describe --quiet", "--quiet: not used by --describe"},
      {kTune + " --validate x.jsonl --plan " + plan.path() + " --profile " + plan.path() + " --nodes 2",
       "--nodes: not used by --validate"},
      {kTune + " --validate x.jsonl --plan " + plan.path() + " --profile " + plan.path() + " --describe",
       "--describe: not used by --validate"},
      {kTune + " --model tiny --profile " + plan.path() + " --what-if nodes=2 --sensitivity",
       "--sensitivity: not used by --what-if"},
      {kTune + " --model tiny --profile " + plan.path() + " --sensitivity --top 2",
       "--top: not used by --sensitivity"},
      {kTune + " --model tiny --profile " + plan.path() + " --emit deepspeed --update-only",
       "--update-only: not used by --emit"},
      {kTune + " --model tiny --profile " + plan.path() + " --out-profile p.json",
       "--out-profile: not used by the plan search"},
  };
  for (const IgnoredFlag& c : cases) {
    const Result r = run_bounded(c.command);
    EXPECT_EQ(r.status, 2) << c.command << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.command << ": " << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.command << ": " << r.out;
  }
}

// hidden 1048576 x 1M layers printed a negative parameter count; now the fields are named.
TEST(TuneDescribe, ModelWhoseParameterCountOverflowsIsRefusedNamingTheFields) {
  const ScratchFile model("huge-model.json",
                          R"({"schema":"mlpo.model/1","vocab":32000,"hidden":1048576,"layers":1048576,
      "heads":1024,"kv_heads":1024,"ffn_hidden":4194304,"seq_len":4096})");
  const Result r = run_bounded(kTune + " --model " + model.path() + " --describe");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("huge-model.json: layers x hidden x ffn_hidden: the model would have"),
            std::string::npos)
      << r.out;
}

TEST(TuneDescribe, ShapeWhoseTokenCountOverflowsIsRefusedNamingTheFlags) {
  const Result r = run_bounded(
      kTune +
      " --model llama2-70b --describe --nodes 1048576 --gpus-per-node 1048576 --micro-batch 1048576"
      " --seq-len 1048576");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--micro-batch x --seq-len"), std::string::npos) << r.out;
}

// A FIFO given as an input file is refused without opening it (which would block forever),
// a directory is reported as one, and a JSON document that is not an object names its file.
TEST(CliPaths, FifoDirectoryAndNonObjectInputsAreRefusedNamingTheFile) {
  const std::string fifo = ::testing::TempDir() + "/mlpo-cli-fifo.json";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const ScratchFile array("array.json", "[1, 2]");
  const ScratchFile log("log.jsonl", "{}\n");
  const std::string dir = ::testing::TempDir();
  const std::vector<IgnoredFlag> cases = {
      {kTune + " --model " + fifo + " --describe",
       fifo + ": is a FIFO (named pipe), not a regular file; expected an mlpo.model/1"},
      {kTune + " --model tiny --profile " + fifo, fifo + ": is a FIFO"},
      {kTune + " --validate " + log.path() + " --plan " + fifo + " --profile " + fifo, fifo + ": is a FIFO"},
      {kTune + " --validate " + fifo + " --plan " + fifo + " --profile " + fifo, fifo + ": is a FIFO"},
      {kRun + " --update-only --params 1M --plan " + fifo, fifo + ": is a FIFO"},
      {kRun + " --model " + fifo + " --data x.bin", fifo + ": is a FIFO"},
      {kProfile + " --tier a=" + dir + " --out " + dir + "/mlpo-cli-p.json --compare " + fifo,
       fifo + ": is a FIFO"},
      {kTune + " --model " + dir + "/ --describe",
       ": is a directory, not a regular file; expected an mlpo.model/1"},
      {kTune + " --model " + array.path() + " --describe",
       array.path() + ": the document is an array, not a JSON object"},
      {kTune + " --model tiny --profile " + array.path(), array.path() + ": the document is an array"},
  };
  for (const IgnoredFlag& c : cases) {
    const Result r = run_bounded(c.command);
    EXPECT_EQ(r.status, 2) << c.command << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.command << ": " << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.command << ": " << r.out;
  }
  std::remove(fifo.c_str());
}

// An output path that is a directory is refused before the search (which would fail only at
// its final rename).
TEST(CliPaths, OutputThatIsADirectoryIsRefusedBeforeTheWork) {
  const std::string dir = ::testing::TempDir();
  for (const std::string flag : {"--out", "--timeline"}) {
    const Result r = run_bounded(kTune + " --model 1b --profile " + kExampleProfile +
                                 " --host-memory-budget 12GiB " + flag + " " + dir);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(lines(r.out), 1) << r.out;
    EXPECT_NE(r.out.find(flag + " " + dir + ": is a directory"), std::string::npos) << r.out;
  }
}

// The planning modes: what-if prints both machines and writes the edited profile, a bad edit
// is bad usage naming it, --emit deepspeed writes a ds_config.json, --sensitivity --json ranks.
TEST(TunePlanning, WhatIfPrintsBothMachinesAndWritesTheEditedProfile) {
  const std::string profile = ::testing::TempDir() + "/mlpo-cli-what-if-profile.json";
  Result r =
      run(kTune + " --model 1b --profile " + kExampleProfile +
          " --gpus-per-node 2 --simulate-top 2 --what-if tier.nvme.read_gbps*2 --what-if host.memory=1TiB "
          "--out-profile " +
          profile);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("as profiled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with the edits"), std::string::npos) << r.out;
  const mlpo::Profile edited = mlpo::load_profile(profile);
  EXPECT_EQ(edited.host.memory_bytes, std::int64_t{1} << 40);
  std::remove(profile.c_str());
}

TEST(TunePlanning, ABadEditExitsTwoNamingItBeforeAnyWork) {
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile + " --what-if tier.nvme.speed*2");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("--what-if tier.nvme.speed*2: unknown tier field"), std::string::npos) << r.out;
  Result e = run(kTune + " --model 1b --profile " + kExampleProfile + " --emit megatron");
  EXPECT_EQ(e.status, 2) << e.out;
}

TEST(TunePlanning, EmitDeepSpeedWritesTheConfigAndBothPredictions) {
  const std::string config = ::testing::TempDir() + "/mlpo-cli-ds-config.json";
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile +
                 " --gpus-per-node 4 --simulate-top 2 --emit deepspeed --out " + config);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("MLPO's own plan on this machine"), std::string::npos) << r.out;
  const mlpo::Json j = mlpo::read_json_file(config, "ds_config");
  EXPECT_EQ(j.at("zero_optimization").at("stage"), 3);
  EXPECT_EQ(j.at("zero_optimization").at("offload_optimizer").at("device"), "nvme");
  std::remove(config.c_str());
}

TEST(TunePlanning, SensitivityJsonRanksTheResources) {
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile +
                 " --gpus-per-node 2 --simulate-top 2 --sensitivity --change 10 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const mlpo::Json j = mlpo::Json::parse(r.out.substr(r.out.find('{')));
  EXPECT_DOUBLE_EQ(j.at("change").get<double>(), 0.1);
  ASSERT_GT(j.at("resources").size(), 5u);
  EXPECT_GE(j.at("resources")[0].at("impact").get<double>(), j.at("resources")[1].at("impact").get<double>());
}
