// The command-line contract: --help and --version exit 0, bad usage and invalid input exit 2
// with a one-line message, and --describe --json is machine-readable.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "core/json_io.hpp"

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& command) {
  Result r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

const std::string kTune = MLPO_TUNE_BIN;

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
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"schema":"mlpo.model/1","vocab":256,"hidden":-3,"layers":2,"heads":2,"kv_heads":2,"ffn_hidden":8,"seq_len":8})", f);
  std::fclose(f);
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

}  // namespace

TEST(TuneSearch, WritesAPlanWithPredictionAndBaselineAndExplains) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-plan.json";
  const std::string svg = ::testing::TempDir() + "/mlpo-cli-timeline.svg";
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile + " --gpus-per-node 2 --host-memory-budget 12GiB --simulate-top 3" +
                 " --explain --out " + plan + " --timeline " + svg);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("what each principle saves"), std::string::npos) << r.out;
  mlpo::Json j = mlpo::read_json_file(plan, "plan");
  EXPECT_EQ(j["schema"], "mlpo.plan/1");
  EXPECT_GT(j["prediction"]["iteration_s"].get<double>(), 0);
  EXPECT_GT(j["baseline_prediction"]["iteration_s"].get<double>(), j["prediction"]["iteration_s"].get<double>());
  FILE* f = std::fopen(svg.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char head[5] = {};
  EXPECT_EQ(std::fread(head, 1, 4, f), 4u);
  std::fclose(f);
  EXPECT_EQ(std::string(head), "<svg");
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
  Result t = run(kTune + " --model 1b --profile " + kExampleProfile + " --host-memory-budget 12GiB --simulate-top 2 --update-only --quiet --out " + plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string log = ::testing::TempDir() + "/mlpo-cli-run.jsonl";
  FILE* f = std::fopen(log.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"step\":0,\"update_s\":50,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n"
             "{\"step\":1,\"update_s\":5,\"forward_s\":0,\"backward_s\":0,\"tiers\":[],\"new_field\":true}\n", f);
  std::fclose(f);
  Result r = run(kTune + " --validate " + log + " --plan " + plan + " --profile " + kExampleProfile);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("update_s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 averaged"), std::string::npos) << r.out;
  std::remove(plan.c_str());
  std::remove(log.c_str());
}

TEST(TuneSimulate, PrintsTheBreakdownOfTheGivenPlanAndItsJson) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-splan.json";
  Result t = run(kTune + " --model 1b --profile " + kExampleProfile + " --host-memory-budget 12GiB --simulate-top 2 --update-only --quiet --out " + plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string svg = ::testing::TempDir() + "/mlpo-cli-sim.svg";
  Result r = run(kTune + " --simulate " + plan + " --profile " + kExampleProfile + " --update-only --host-memory-budget 12GiB --timeline " + svg);
  EXPECT_EQ(r.status, 0) << r.out;
  FILE* f = std::fopen(svg.c_str(), "r");
  ASSERT_NE(f, nullptr) << r.out;
  char head[5] = {};
  EXPECT_EQ(std::fread(head, 1, 4, f), 4u);
  std::fclose(f);
  EXPECT_EQ(std::string(head), "<svg") << head;
  std::remove(svg.c_str());
  for (const char* part : {"predicted (SimGrid)", "bound per phase", "per tier"}) EXPECT_NE(r.out.find(part), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("error"), std::string::npos) << r.out;
  Result j = run(kTune + " --simulate " + plan + " --profile " + kExampleProfile + " --update-only --json --gpus-per-node 2");
  ASSERT_EQ(j.status, 0) << j.out;
  const mlpo::Json parsed = mlpo::Json::parse(j.out.substr(std::min(j.out.size(), j.out.find("{\n"))));
  EXPECT_EQ(parsed["schema"], "mlpo.simulation/1");
  EXPECT_EQ(parsed["cluster"]["gpus_per_node"], 2);  // the shape flag overrides the plan's
  std::remove(plan.c_str());
}

TEST(TuneValidate, JsonCarriesEveryRow) {
  const std::string plan = ::testing::TempDir() + "/mlpo-cli-vjplan.json";
  Result t = run(kTune + " --model 1b --profile " + kExampleProfile + " --host-memory-budget 12GiB --simulate-top 2 --update-only --quiet --out " + plan);
  ASSERT_EQ(t.status, 0) << t.out;
  const std::string log = ::testing::TempDir() + "/mlpo-cli-vjrun.jsonl";
  FILE* f = std::fopen(log.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"step\":0,\"update_s\":50,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n"
             "{\"step\":1,\"update_s\":5,\"forward_s\":0,\"backward_s\":0,\"tiers\":[]}\n", f);
  std::fclose(f);
  Result r = run(kTune + " --validate " + log + " --plan " + plan + " --profile " + kExampleProfile + " --json");
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
  Result r = run(kTune + " --model 1b --profile " + kExampleProfile + " --baseline-tier floppy --update-only --quiet");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--baseline-tier floppy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvme"), std::string::npos) << r.out;
}
