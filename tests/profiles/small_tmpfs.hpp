#pragma once
// SmallTmpfs: a tmpfs of a few MiB mounted on a fresh directory (needs root / CAP_SYS_ADMIN;
// mounted() is false elsewhere and the test skips), unmounted when the test ends. The real
// way to get a file system with too little free space.

#include <sys/mount.h>

#include <filesystem>
#include <string>

#include "tests/executor/io/temp_dir.hpp"

namespace mlpo::profiles::testing {

class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& options) : mount_point_(dir_.sub("small")) {
    mounted_ = ::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::filesystem::path& path() const { return mount_point_; }

 private:
  io::testing::TempDir dir_;
  std::filesystem::path mount_point_;
  bool mounted_ = false;
};

}  // namespace mlpo::profiles::testing
