#include "executor/io/mapped_file.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::io {

MappedFile::MappedFile(const TierFile& file, std::uint64_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::string who = "tier '" + file.tier_name() + "' (" + file.path().string() + ")";
  if (file.size() < bytes)
    throw Error(who + ": the file holds " + std::to_string(file.size()) + " bytes, " + std::to_string(bytes) +
                " are to be mapped; was it truncated? remove the run directory and start again");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, file.fd(), 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    throw Error(who + ": cannot map " + format_bytes(static_cast<double>(bytes)) + " of the state file: " +
                errno_text(err) + (err == ENOMEM ? "; give the tier a smaller share or free host memory" : ""));
  }
  // Huge pages where the file system offers them (tmpfs with huge=within_size/always):
  // fewer TLB misses while AdamW streams through the state. Advice only; failure is fine.
  ::madvise(p, bytes, MADV_HUGEPAGE);
  data_ = static_cast<std::byte*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
}

}  // namespace mlpo::io
