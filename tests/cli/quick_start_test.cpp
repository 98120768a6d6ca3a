// docs/getting-started.md's quick start, run as written: the commands between its
// <!-- quick-start:begin --> and <!-- quick-start:end --> markers, from a directory laid out
// like the repository root (build/release/cli, docs, README.md), each to exit 0 and print what
// the page says it prints. An edit of the recipe that breaks it, or a change of the tools that
// breaks the recipe, fails here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.hpp"

namespace {

namespace fs = std::filesystem;

// The recipe's command lines (comments and blank lines dropped).
std::vector<std::string> recipe(const fs::path& page) {
  std::ifstream in(page);
  std::vector<std::string> commands;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "<!-- quick-start:begin -->") inside = true;
    if (line == "<!-- quick-start:end -->") inside = false;
    if (!inside || line.empty() || line[0] == '#' || line.rfind("```", 0) == 0 || line.rfind("<!--", 0) == 0)
      continue;
    commands.push_back(line);
  }
  return commands;
}

TEST(QuickStart, TheRecipeInGettingStartedRuns) {
  const fs::path source = MLPO_SOURCE_DIR;
  const std::vector<std::string> commands = recipe(source / "docs/getting-started.md");
  ASSERT_GE(commands.size(), 8u) << "docs/getting-started.md: no quick-start recipe between its markers";
  const fs::path root = fs::path(::testing::TempDir()) / ("mlpo-quick-start-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "build/release");
  fs::create_directory_symlink(fs::path(MLPO_RUN_BIN).parent_path(), root / "build/release/cli");
  fs::create_directory_symlink(source / "docs", root / "docs");
  fs::create_symlink(source / "README.md", root / "README.md");
  std::string printed;
  for (const std::string& command : commands) {
    const auto r = mlpo::testing::run_command("cd " + root.string() + " && " + command);
    printed += r.out;
    ASSERT_EQ(r.status, 0) << command << "\n" << r.out;
  }
  // What the page says the steps print.
  for (const char* expected :
       {"prepare-data: ", "-> run/train.bin", "wrote run/profile.json", "plan written to run/plan.json",
        "uses: host memory ", "predicted throughput: ", "step 20/20", "loss ",
        "resume: continuing from run/checkpoints/ckpt-20", "step 30/30",
        "export: run/export/ (Hugging Face "
        "directory: config.json, model.safetensors; ",
        "report: run/report.svg", "predicted"})
    EXPECT_NE(printed.find(expected), std::string::npos) << expected << "\n" << printed;
  EXPECT_TRUE(fs::exists(root / "run/export/model.safetensors"));
  // The second run continues the first exactly: no warning about a changed setting. (The
  // hypervisor's steal warning is about the machine, e.g. ctest -j2 on a busy VM, not the recipe.)
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);)
    if (line.find("warning:") != std::string::npos && line.find("the hypervisor took") == std::string::npos)
      ADD_FAILURE() << line;
  fs::remove_all(root);
}

}  // namespace
