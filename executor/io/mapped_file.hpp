#pragma once
// MappedFile: a TierFile's first `bytes` mapped shared into the process, read-write. Used for
// tiers on RAM-backed file systems (kind `host`, e.g. /dev/shm): the file's pages are the
// memory itself, so the offload engine updates the state there in place instead of copying
// it through the I/O engine into a buffer and back. Stores through the mapping are the
// file's contents (no msync needed on tmpfs; elsewhere the kernel writes them back).
// The mapping is populated at construction, so the first update does not take page faults.
// Truncation: a page past the end of a truncated file raises SIGBUS when touched. Callers
// check size() of the file before use (StateStore does, per subgroup); for a truncation
// inside that window, a process-wide SIGBUS handler (installed with the first mapping) ends
// the process with exit status 2 and a message naming the tier and file, never a crash.

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
  int sigbus_entry_ = -1;  // this mapping's entry in the SIGBUS handler's table
};

}  // namespace mlpo::io
