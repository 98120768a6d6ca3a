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
