#include "executor/io/pinned_buffer_pool.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/tier.hpp"

namespace mlpo::io {

// The raw system calls, not the libc wrappers: AddressSanitizer replaces mlock/munlock with
// no-ops, and the debug build must lock (and test) exactly what the release build does.
PinHooks mlock_hooks() {
  PinHooks hooks;
  hooks.pin = [](void* data, std::size_t size) {
    if (::syscall(SYS_mlock, data, size) != 0) {
      const int err = errno;
      throw Error("cannot page-lock " + format_bytes(static_cast<double>(size)) +
                  " for the pinned buffer pool: " + errno_text(err) +
                  "; raise the locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) or lower the pool budget");
    }
  };
  hooks.unpin = [](void* data, std::size_t size) { ::syscall(SYS_munlock, data, size); };
  return hooks;
}

// ---- PinnedBuffer ----

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : pool_(other.pool_), data_(other.data_), size_(other.size_) {
  other.pool_ = nullptr;
  other.data_ = nullptr;
  other.size_ = 0;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = other.pool_;
    data_ = other.data_;
    size_ = other.size_;
    other.pool_ = nullptr;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

void PinnedBuffer::reset() {
  if (pool_ != nullptr) pool_->release(data_, size_);
  pool_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

// ---- PinnedBufferPool ----

PinnedBufferPool::PinnedBufferPool(std::uint64_t budget_bytes, PinHooks hooks, bool huge_pages)
    : hooks_(std::move(hooks)), budget_(round_up(budget_bytes, kIoAlign)) {
  if (budget_ == 0) throw Error("pinned buffer pool: budget must be > 0 bytes");
  // Back the pool with 2 MiB transparent huge pages where the kernel allows: a 1 MiB O_DIRECT
  // transfer from 4 KiB pages scattered in physical memory needs 256 DMA segments, more than
  // many devices take in one request (virtio-blk: 254), so the block layer splits it in two.
  // A huge page is physically contiguous, so each block stays one segment and one request.
  constexpr std::uint64_t kHuge = 2 * MiB;
  mapped_ = round_up(budget_, kHuge);
  const std::uint64_t reserve = mapped_ + kHuge;  // room to align the start to 2 MiB
  void* p =
      ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    throw Error("pinned buffer pool: cannot map " + format_bytes(static_cast<double>(budget_)) + ": " +
                errno_text(err) + "; lower the pool budget");
  }
  auto* raw = static_cast<std::byte*>(p);
  auto* aligned = reinterpret_cast<std::byte*>(round_up(reinterpret_cast<std::uintptr_t>(raw), kHuge));
  if (aligned > raw) ::munmap(raw, static_cast<std::size_t>(aligned - raw));
  const std::size_t tail = static_cast<std::size_t>((raw + reserve) - (aligned + mapped_));
  if (tail > 0) ::munmap(aligned + mapped_, tail);
  base_ = aligned;
  ::madvise(base_, mapped_, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);  // advisory: fine if THP is off
  // Fault everything in now (as huge pages where possible), not during the first transfer.
  std::memset(base_, 0, mapped_);
  if (hooks_.pin) {
    try {
      hooks_.pin(base_, budget_);
    } catch (...) {
      ::munmap(base_, mapped_);
      throw;
    }
  }
  free_.emplace(0, budget_);
}

PinnedBufferPool::~PinnedBufferPool() {
  MLPO_CHECK(in_use_ == 0, "pinned buffer pool destroyed with " + std::to_string(in_use_) +
                               " bytes still leased; leases must not outlive their pool");
  if (hooks_.unpin) hooks_.unpin(base_, budget_);
  ::munmap(base_, mapped_);
}

std::optional<PinnedBuffer> PinnedBufferPool::take_locked(std::uint64_t bytes) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const std::uint64_t offset = it->first;
    const std::uint64_t rest = it->second - bytes;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + bytes, rest);
    in_use_ += bytes;
    return PinnedBuffer(this, base_ + offset, bytes);
  }
  return std::nullopt;
}

PinnedBuffer PinnedBufferPool::acquire(std::uint64_t bytes) {
  const std::uint64_t want = round_up(bytes, kIoAlign);
  if (want == 0 || want > budget_) {
    throw Error("pinned buffer pool: cannot lease " + format_bytes(static_cast<double>(bytes)) +
                " from a pool of " + format_bytes(static_cast<double>(budget_)) +
                "; raise the pool budget or use smaller subgroups");
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    if (auto lease = take_locked(want)) return std::move(*lease);
    freed_.wait(lock);
  }
}

std::optional<PinnedBuffer> PinnedBufferPool::try_acquire(std::uint64_t bytes) {
  const std::uint64_t want = round_up(bytes, kIoAlign);
  if (want == 0 || want > budget_) return std::nullopt;
  std::lock_guard lock(mutex_);
  return take_locked(want);
}

std::uint64_t PinnedBufferPool::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void PinnedBufferPool::release(std::byte* data, std::uint64_t size) {
  {
    std::lock_guard lock(mutex_);
    std::uint64_t offset = static_cast<std::uint64_t>(data - base_);
    std::uint64_t length = size;
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + length == next->first) {
      length += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        length += prev->second;
        free_.erase(prev);
      }
    }
    free_.emplace(offset, length);
    in_use_ -= size;
  }
  freed_.notify_all();
}

}  // namespace mlpo::io
