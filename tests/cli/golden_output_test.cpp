// Golden outputs: each docs/examples/*.txt is an example the docs show, kept as a test. Its
// first line is the command ("$ mlpo-tune --simulate docs/examples/offgrid-plan.json ..."), run
// from the repository root with the built tools; the rest is its standard output, which must
// come out the same (a search's wall time aside). A change of what a tool prints fails here,
// naming the file and the first line that differs; when the change is meant, rewrite the files
// with `MLPO_UPDATE_GOLDEN=1 ctest -R GoldenOutput` and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/run_command.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = MLPO_SOURCE_DIR;

// The tool named at the start of a golden command, as built.
std::string tool_path(const std::string& name) {
  if (name == "mlpo-tune") return MLPO_TUNE_BIN;
  if (name == "mlpo-profile") return MLPO_PROFILE_BIN;
  if (name == "mlpo-run") return MLPO_RUN_BIN;
  return "";
}

// What may differ between two runs of the same command: a search's wall time.
std::string normalized(const std::string& text) {
  static const std::regex wall_time(R"(; [0-9.]+ (us|ms|s)\n)");
  return std::regex_replace(text, wall_time, "; <time>\n");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "line N: expected ... got ..." for the first line that differs.
std::string first_difference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 2;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, el));
    const bool more_a = static_cast<bool>(std::getline(a, al));
    if (!more_e && !more_a) return "none";
    if (!more_e || !more_a || el != al)
      return "line " + std::to_string(line) + ":\n  expected: " + (more_e ? el : "(end)") +
             "\n  printed:  " + (more_a ? al : "(end)");
  }
}

std::vector<fs::path> golden_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kSource / "docs/examples"))
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(GoldenOutput, EveryDocsExampleIsWhatTheToolPrints) {
  const std::vector<fs::path> files = golden_files();
  ASSERT_GE(files.size(), 5u) << "docs/examples: the golden outputs are missing";
  const bool update = std::getenv("MLPO_UPDATE_GOLDEN") != nullptr;
  for (const fs::path& file : files) {
    const std::string text = read_file(file);
    const std::size_t eol = text.find('\n');
    ASSERT_TRUE(text.rfind("$ ", 0) == 0 && eol != std::string::npos)
        << file << ": the first line must be the command, \"$ mlpo-... ARGS\"";
    const std::string command = text.substr(2, eol - 2);
    const std::string tool = tool_path(command.substr(0, command.find(' ')));
    ASSERT_FALSE(tool.empty()) << file << ": runs no MLPO tool: " << command;
    // Standard output only: notes and warnings on stderr are not part of the example.
    const auto r = mlpo::testing::run_command("(cd " + kSource.string() + " && " + tool +
                                              command.substr(command.find(' ')) + " 2>/dev/null)");
    ASSERT_EQ(r.status, 0) << file << ": " << command << "\n" << r.out;
    const std::string expected = text.substr(eol + 1);
    if (update && normalized(r.out) != normalized(expected)) {
      std::ofstream(file) << "$ " << command << "\n" << r.out;
      continue;
    }
    EXPECT_EQ(normalized(r.out), normalized(expected))
        << file << " (" << command << "), first difference at "
        << first_difference(normalized(expected), normalized(r.out))
        << "\nIf the change is meant: MLPO_UPDATE_GOLDEN=1 ctest -R GoldenOutput, then review the diff.";
  }
}

TEST(GoldenOutput, DocsQuoteTheGoldenFilesVerbatim) {
  // A fenced block in the docs that starts with a golden file's command line is that file: an
  // example quoted in a page cannot drift from the output the first test checks.
  std::vector<std::pair<std::string, std::string>> golden;  // command line, whole file
  for (const fs::path& file : golden_files()) {
    const std::string text = read_file(file);
    golden.emplace_back(text.substr(0, text.find('\n')), normalized(text));
  }
  std::vector<fs::path> pages{kSource / "README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  int quoted = 0;
  for (const fs::path& page : pages) {
    std::istringstream in(read_file(page));
    std::string line, block;
    bool inside = false;
    while (std::getline(in, line)) {
      if (line.rfind("```", 0) == 0) {
        if (inside) {
          const std::string first = block.substr(0, block.find('\n'));
          for (const auto& [command, text] : golden)
            if (first == command) {
              ++quoted;
              EXPECT_EQ(normalized(block), text)
                  << page << " quotes " << command << " unlike docs/examples: first difference at "
                  << first_difference(text, normalized(block));
            }
          block.clear();
        }
        inside = !inside;
        continue;
      }
      if (inside) block += line + "\n";
    }
  }
  EXPECT_GE(quoted, 1) << "no page quotes a golden example";
}

}  // namespace
