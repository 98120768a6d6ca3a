#pragma once
// MappedFile: a TierFile's first `bytes` mapped shared into the process, read-write. Used for
// tiers on RAM-backed file systems (kind `host`, e.g. /dev/shm): the file's pages are the
// memory itself, so the offload engine updates the state there in place instead of copying
// it through the I/O engine into a buffer and back. Stores through the mapping are the
// file's contents (no msync needed on tmpfs; elsewhere the kernel writes them back).
// The mapping is populated at construction, so the first update does not take page faults.

#include <cstddef>
#include <cstdint>

#include "executor/io/tier_file.hpp"

namespace mlpo::io {

class MappedFile {
 public:
  // Throws mlpo::Error naming the tier and file when the file is shorter than `bytes` or
  // cannot be mapped. `file` must stay open while the mapping lives.
  MappedFile(const TierFile& file, std::uint64_t bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const { return data_; }
  std::uint64_t size() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace mlpo::io
