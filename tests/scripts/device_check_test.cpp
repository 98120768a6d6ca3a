// scripts/device-check.sh --dry-run: the GPU check's preflight and stage plan, run here without a
// GPU. It must finish in seconds and leave exactly the two files the device machine brings back
// (the summary and one archive), with every stage named and SKIPPED.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/executor/io/temp_dir.hpp"

namespace mlpo::testing {
namespace {

namespace fs = std::filesystem;
using io::testing::TempDir;

const std::string kScript = std::string(MLPO_SOURCE_DIR) + "/scripts/device-check.sh";

int run_script(const std::string& args, const fs::path& log) {
  const int status = std::system(("bash " + kScript + " " + args + " > " + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DeviceCheckDryRun, WritesExactlyTheSummaryAndTheArchiveWithEveryStageSkipped) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  ASSERT_EQ(run_script(out.string() + " --dry-run", dir.path() / "log"), 0) << read(dir.path() / "log");
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"summary.txt", "device-check.tar.gz"}));
  const std::string summary = read(out / "summary.txt");
  for (const char* line :
       {"preflight: GPU:", "preflight: libcublasLt.so.13:", "preflight: compute-sanitizer:"})
    EXPECT_NE(summary.find(line), std::string::npos) << line << " missing from\n" << summary;
  for (const char* stage : {"cuda-tests", "train-small", "mfu", "offload", "nccl", "profile", "sanitizer"})
    EXPECT_NE(summary.find(std::string("stage ") + stage), std::string::npos) << stage << " missing from\n"
                                                                              << summary;
  EXPECT_EQ(summary.find("PASSED"), std::string::npos) << "a dry run passed a stage:\n" << summary;
  EXPECT_EQ(summary.find("FAILED"), std::string::npos) << summary;
  EXPECT_NE(summary.find("dry run, every stage SKIPPED"), std::string::npos) << summary;
}

TEST(DeviceCheckDryRun, AnUnknownModeIsRefusedWithStatusTwo) {
  TempDir dir;
  EXPECT_EQ(run_script((dir.path() / "out").string() + " --fast", dir.path() / "log"), 2);
  EXPECT_NE(read(dir.path() / "log").find("unknown mode '--fast'"), std::string::npos);
}

}  // namespace
}  // namespace mlpo::testing
