#pragma once
// IoRing: one io_uring instance (owns its fd and mappings), driven by one thread at a time
// (TierIo's I/O thread). A plain interrupt-driven ring: no SQPOLL thread burning a core.
// Fixed buffers: register_buffers() registers a memory region (the pinned pool) in pieces
// of at most 1 GiB (the kernel's limit per buffer); fixed_index() tells which registered
// piece covers a range, so reads/writes into pool memory skip per-I/O page pinning.

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mlpo::io {

class IoRing {
 public:
  // Throws mlpo::Error (with the errno text) when the kernel refuses a ring; `who` names the
  // tier in that message.
  IoRing(unsigned entries, const std::string& who);
  ~IoRing();
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  io_uring* get() { return &ring_; }

  // Registers `region` as fixed buffers. Returns false (and registers nothing) when the
  // kernel refuses, e.g. for lack of locked-memory allowance; `error` gets the errno text.
  bool register_buffers(std::span<std::byte> region, std::string& error);
  // Index of the registered buffer that contains [data, data+size), or -1.
  int fixed_index(const std::byte* data, std::size_t size) const;

 private:
  io_uring ring_{};
  std::byte* region_ = nullptr;
  std::size_t region_size_ = 0;
  std::size_t piece_ = 0;
};

}  // namespace mlpo::io
