#pragma once
// TierFile: one open file in a tier directory (owns the fd). Opened with O_DIRECT when the
// tier asks for it; where the file system refuses O_DIRECT (EINVAL at open) or cannot honour
// it (tmpfs: memory, there is no page cache to bypass), it is reopened buffered and the caller
// is warned (core/diagnostics.hpp), naming the tier. open() also preallocates (fallocate) so
// a full disk fails at start, not in the middle of an iteration.
// With CRC on, the file keeps the CRC32C of every extent written through the engine
// (offset -> length, crc) in memory, for this process's lifetime; reads of a recorded
// extent are verified against it (TierIo). Thread-safe.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/diagnostics.hpp"
#include "executor/io/tier.hpp"
#include "executor/io/unique_fd.hpp"

namespace mlpo::io {

struct ExtentCrc {
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
};

class TierFile {
 public:
  // Opens (creating when absent) tier.path / relative, creating missing directories below
  // tier.path, and preallocates `preallocate` bytes. Throws mlpo::Error naming the tier and
  // path when tier.path is missing or not a directory, or the file cannot be created or
  // preallocated. Warnings (O_DIRECT refused, fallocate unsupported) go to `diagnostics`.
  static std::unique_ptr<TierFile> open(const Tier& tier, const std::filesystem::path& relative,
                                        std::uint64_t preallocate, const Diagnostics& diagnostics);
  ~TierFile();
  TierFile(const TierFile&) = delete;
  TierFile& operator=(const TierFile&) = delete;

 private:
  struct Key {
    explicit Key() = default;
  };

 public:
  TierFile(Key, int fd, bool direct, std::filesystem::path path, std::string tier_name);

  int fd() const { return fd_.get(); }
  bool direct() const { return direct_; }  // O_DIRECT in effect
  const std::filesystem::path& path() const { return path_; }
  const std::string& tier_name() const { return tier_name_; }
  std::uint64_t size() const;  // current size (fstat); throws mlpo::Error

  // Grows the allocation to at least `bytes` (fallocate; ftruncate with a warning where the
  // file system has no fallocate). Throws mlpo::Error on ENOSPC and other failures.
  void preallocate(std::uint64_t bytes, const Diagnostics& diagnostics);

  void record_crc(std::uint64_t offset, ExtentCrc crc);
  std::optional<ExtentCrc> recorded_crc(std::uint64_t offset) const;
  void forget_crc(std::uint64_t offset);

 private:
  std::string who() const;  // "tier 'x' (path)"

  UniqueFd fd_;
  bool direct_ = false;
  std::filesystem::path path_;
  std::string tier_name_;
  mutable std::mutex crc_mutex_;
  std::unordered_map<std::uint64_t, ExtentCrc> crcs_;
};

}  // namespace mlpo::io
