#pragma once
// PinnedBufferPool: a fixed byte budget of page-locked, 4 KiB-aligned host memory, mapped
// once at construction and handed out as PinnedBuffer leases. acquire() blocks (never
// over-allocates) until a contiguous range is free; a lease returns its range when destroyed.
// The whole mapping is one region, so each tier's io_uring registers it once as fixed
// buffers (TierIo does this). Page-locking goes through PinHooks: mlock/munlock by default;
// a CUDA build can pass cudaHostRegister/cudaHostUnregister instead.
// The mapping asks for transparent huge pages (MADV_HUGEPAGE) so each I/O block is one
// physically contiguous DMA segment.
// Cost: the budget is populated and locked up front (a few ms per GiB); acquire/release are
// O(log free ranges) under one mutex. The pool must outlive every lease (checked).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>

namespace mlpo::io {

struct PinHooks {
  std::function<void(void* data, std::size_t size)> pin;    // throw mlpo::Error on failure
  std::function<void(void* data, std::size_t size)> unpin;  // must not throw
};

// mlock/munlock; pin throws mlpo::Error naming RLIMIT_MEMLOCK when the kernel refuses.
PinHooks mlock_hooks();

class PinnedBufferPool;

// A lease on size() bytes (a multiple of 4 KiB, >= what was asked) of the pool. Movable.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_, size_}; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();  // returns the range to the pool now

 private:
  friend class PinnedBufferPool;
  PinnedBuffer(PinnedBufferPool* pool, std::byte* data, std::uint64_t size)
      : pool_(pool), data_(data), size_(size) {}
  PinnedBufferPool* pool_ = nullptr;
  std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
};

class PinnedBufferPool {
 public:
  // Maps and pins `budget_bytes` (rounded up to 4 KiB). Throws mlpo::Error if the mapping
  // or pinning fails. huge_pages = false keeps 4 KiB pages (for measuring what they cost).
  explicit PinnedBufferPool(std::uint64_t budget_bytes, PinHooks hooks = mlock_hooks(),
                            bool huge_pages = true);
  ~PinnedBufferPool();  // aborts if a lease is still out
  PinnedBufferPool(const PinnedBufferPool&) = delete;
  PinnedBufferPool& operator=(const PinnedBufferPool&) = delete;

  // Blocks until `bytes` (rounded up to 4 KiB) contiguous bytes are free. Throws
  // mlpo::Error when bytes is 0 or more than the budget (it could never be satisfied).
  PinnedBuffer acquire(std::uint64_t bytes);
  // Same without blocking; nullopt when no contiguous range is free now.
  std::optional<PinnedBuffer> try_acquire(std::uint64_t bytes);

  std::uint64_t budget() const { return budget_; }
  std::uint64_t in_use() const;
  // The whole pinned mapping (for io_uring_register_buffers).
  std::span<std::byte> region() const { return {base_, budget_}; }

 private:
  friend class PinnedBuffer;
  std::optional<PinnedBuffer> take_locked(std::uint64_t bytes);
  void release(std::byte* data, std::uint64_t size);

  PinHooks hooks_;
  std::byte* base_ = nullptr;
  std::uint64_t budget_ = 0;
  std::uint64_t mapped_ = 0;  // budget_ rounded up to 2 MiB (huge pages)
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> length, coalesced
  std::uint64_t in_use_ = 0;
};

}  // namespace mlpo::io
