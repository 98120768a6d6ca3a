#pragma once
// SyncedFile: a file written front to back with its running CRC32C, fsync'd by finish();
// the building block of crash-safe outputs (checkpoint files, the exported safetensors).
// Errors are mlpo::Error naming the file, the failing call and `hint` (what the user can do).

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/json_io.hpp"
#include "executor/io/unique_fd.hpp"

namespace mlpo::io {

class SyncedFile {
 public:
  // Creates (truncates) `path`.
  SyncedFile(std::filesystem::path path, std::string hint);
  void write(const void* data, std::size_t n);
  // fsync + close; returns {"name": file name, "bytes": n, "crc32c": c}.
  Json finish();
  std::uint64_t bytes() const { return bytes_; }
  std::uint32_t crc32c() const { return crc_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::filesystem::path path_;
  std::string hint_;
  io::UniqueFd fd_;
  std::uint32_t crc_ = 0;
  std::uint64_t bytes_ = 0;
};

// Where an output `target` (an absolute path, file or directory) is built before it is renamed
// into place: "<parent>/.<name>.tmp.<pid>", beside it on the same file system.
std::filesystem::path temp_sibling(const std::filesystem::path& target);

// fsync of a directory (after creating, renaming or removing entries in it).
void fsync_directory(const std::filesystem::path& dir);

}  // namespace mlpo::io
