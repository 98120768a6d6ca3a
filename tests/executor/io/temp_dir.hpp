#pragma once
// TempDir: a fresh directory (mkdtemp) under `parent`, removed with everything in it when
// the test ends. Tests put tier directories here.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace mlpo::io::testing {

class TempDir {
 public:
  explicit TempDir(const std::filesystem::path& parent = "/var/tmp") {
    std::string pattern = (parent / "mlpo-io-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path sub(const std::string& name) const {
    std::filesystem::create_directories(path_ / name);
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace mlpo::io::testing
