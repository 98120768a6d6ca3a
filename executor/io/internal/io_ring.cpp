#include "executor/io/internal/io_ring.hpp"

#include <sys/uio.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::io {

IoRing::IoRing(unsigned entries, const std::string& who) {
  // Plain ring, no SQPOLL/IOPOLL/DEFER_TASKRUN: measured on the dev VM, SINGLE_ISSUER with
  // COOP_ or DEFER_TASKRUN was no faster on the disk and up to 25% slower on tmpfs
  // (docs/benchmarks.md), and a plain ring works on every kernel with io_uring.
  io_uring_params params{};
  const int rc = io_uring_queue_init_params(entries, &ring_, &params);
  if (rc < 0) {
    throw Error(who + ": cannot create an io_uring with " + std::to_string(entries) + " entries: " +
                errno_text(-rc) + "; io_uring may be disabled (sysctl kernel.io_uring_disabled)");
  }
}

IoRing::~IoRing() { io_uring_queue_exit(&ring_); }

bool IoRing::register_buffers(std::span<std::byte> region, std::string& error) {
  constexpr std::size_t kPiece = 1 * GiB;  // io_uring rejects larger fixed buffers
  std::vector<iovec> pieces;
  for (std::size_t off = 0; off < region.size(); off += kPiece) {
    pieces.push_back(iovec{region.data() + off, std::min(kPiece, region.size() - off)});
  }
  const int rc = io_uring_register_buffers(&ring_, pieces.data(), static_cast<unsigned>(pieces.size()));
  if (rc < 0) {
    error = errno_text(-rc);
    return false;
  }
  region_ = region.data();
  region_size_ = region.size();
  piece_ = kPiece;
  return true;
}

int IoRing::fixed_index(const std::byte* data, std::size_t size) const {
  if (region_ == nullptr || data < region_ || data + size > region_ + region_size_) return -1;
  const std::size_t begin = static_cast<std::size_t>(data - region_);
  const std::size_t first = begin / piece_;
  if ((begin + size - 1) / piece_ != first) return -1;  // straddles two registered pieces
  return static_cast<int>(first);
}

}  // namespace mlpo::io
