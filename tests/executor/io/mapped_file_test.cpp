#include "executor/io/mapped_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "temp_dir.hpp"

namespace mlpo::io {
namespace {

using testing::TempDir;

TEST(MappedFile, FileShorterThanTheMappingIsAClearError) {
  TempDir shm("/dev/shm");
  Tier tier{"shm", shm.path(), 1 * MiB, 8, false};
  auto file = TierFile::open(tier, "state", 64 * KiB, {});
  try {
    MappedFile map(*file, 1 * MiB);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file->path().string()), std::string::npos) << e.what();
  }
}

// A truncation between the store's size check and the access (another process, inside
// AdamW's pass) ends the process with status 2 and a message naming the file, not a SIGBUS.
TEST(MappedFileDeathTest, TouchingAPageTruncatedAwayExitsWithAnErrorNamingTheFile) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir shm("/dev/shm");
  Tier tier{"shm", shm.path(), 1 * MiB, 8, false};
  auto file = TierFile::open(tier, "state", 1 * MiB, {});
  MappedFile map(*file, 1 * MiB);
  EXPECT_EXIT(
      {
        if (::ftruncate(file->fd(), 0) != 0) std::_Exit(3);
        // The dying child's own TempDir never reaches its destructor (threadsafe style
        // re-runs the test in the child): remove it now; open fd and mapping stay valid.
        std::error_code ec;
        std::filesystem::remove_all(shm.path(), ec);
        volatile std::byte b = map.data()[512 * KiB];
        (void)b;
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(2), "state.*truncated while in use");
}

}  // namespace
}  // namespace mlpo::io
