// Input and output paths are checked by their file type before anything opens them: a FIFO
// would block a read forever, a directory as an output fails only at the final rename.
#include "core/path_checks.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, removed at the end.
class ScratchDir {
 public:
  ScratchDir() : path_(fs::path(::testing::TempDir()) / ("mlpo-path-checks-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

using testing::error_of;

TEST(PathChecks, InputThatIsAFifoOrDirectoryIsRefusedWithoutOpeningIt) {
  ScratchDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { read_json_file(dir / "fifo", "a plan"); }),
            dir / "fifo" + ": is a FIFO (named pipe), not a regular file; expected a plan");
  fs::create_directories(dir / "sub");
  EXPECT_EQ(error_of([&] { read_json_file(dir / "sub", "a plan"); }),
            dir / "sub" + ": is a directory, not a regular file; expected a plan");
  EXPECT_NE(error_of([&] { check_input_file("/dev/null", "a plan"); }).find("is a character device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_input_file(dir / "missing", "a plan"); }).find("cannot open (No such file"),
            std::string::npos);
}

TEST(PathChecks, JsonDocumentThatIsNotAnObjectNamesItsFile) {
  ScratchDir dir;
  std::ofstream(dir / "array.json") << "[1, 2]";
  EXPECT_EQ(error_of([&] { read_json_file(dir / "array.json", "a profile"); }),
            dir / "array.json" + ": the document is an array, not a JSON object; expected a profile");
}

TEST(PathChecks, OutputThatIsADirectoryOrInAMissingDirectoryIsRefused) {
  ScratchDir dir;
  fs::create_directories(dir / "sub");
  EXPECT_EQ(error_of([&] { check_output_file(dir / "sub", "--out"); }),
            "--out " + dir / "sub" + ": is a directory; give the path of a file (inside it, or elsewhere)");
  EXPECT_NE(error_of([&] { check_output_file(dir / "nope/x.json", "--out"); }).find("does not exist"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { check_output_file(dir / "new.json", "--out"); }), "");
  std::ofstream(dir / "old.json") << "{}";
  EXPECT_EQ(error_of([&] { check_output_file(dir / "old.json", "--out"); }), "");
}

}  // namespace
}  // namespace mlpo
