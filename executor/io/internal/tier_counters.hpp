#pragma once
// TierCounters: what one tier did in this process — bytes moved, time busy, time spent
// waiting for a node-wide slot, errors. Updated lock-free by the tier's I/O thread and by
// TierSlots; read at any time with snapshot() (each field is individually consistent).

#include <atomic>
#include <cstdint>

namespace mlpo::io {

struct TierCounterSnapshot {
  std::uint64_t bytes_read = 0;     // bytes transferred from the tier (includes 4 KiB tail padding)
  std::uint64_t bytes_written = 0;  // bytes transferred to the tier (includes 4 KiB tail padding)
  std::uint64_t reads = 0;          // completed read requests
  std::uint64_t writes = 0;         // completed write requests
  std::uint64_t errors = 0;         // failed requests (I/O errors, truncation, CRC mismatches)
  std::uint64_t crc_errors = 0;     // of which CRC32C mismatches
  std::uint64_t retries = 0;        // resubmissions after EINTR/EAGAIN or a short transfer
  double busy_s = 0;                // wall time with at least one operation in flight
  double slot_wait_s = 0;           // time spent waiting for a node-wide TierSlot
  std::uint64_t slot_acquisitions = 0;
};

class TierCounters {
 public:
  // Bytes moved by one completed operation (called per operation, so busy tiers update live).
  void add_bytes(bool read, std::uint64_t bytes) {
    (read ? bytes_read_ : bytes_written_).fetch_add(bytes, std::memory_order_relaxed);
  }
  // One request finished successfully.
  void add_request(bool read) { (read ? reads_ : writes_).fetch_add(1, std::memory_order_relaxed); }
  void add_error(bool crc) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (crc) crc_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  void add_retry() { retries_.fetch_add(1, std::memory_order_relaxed); }
  void add_busy_ns(std::uint64_t ns) { busy_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void add_slot_wait_ns(std::uint64_t ns) {
    slot_wait_ns_.fetch_add(ns, std::memory_order_relaxed);
    slot_acquisitions_.fetch_add(1, std::memory_order_relaxed);
  }

  TierCounterSnapshot snapshot() const {
    TierCounterSnapshot s;
    s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    s.reads = reads_.load(std::memory_order_relaxed);
    s.writes = writes_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.crc_errors = crc_errors_.load(std::memory_order_relaxed);
    s.retries = retries_.load(std::memory_order_relaxed);
    s.busy_s = static_cast<double>(busy_ns_.load(std::memory_order_relaxed)) * 1e-9;
    s.slot_wait_s = static_cast<double>(slot_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
    s.slot_acquisitions = slot_acquisitions_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::atomic<std::uint64_t> bytes_read_{0}, bytes_written_{0}, reads_{0}, writes_{0};
  std::atomic<std::uint64_t> errors_{0}, crc_errors_{0}, retries_{0};
  std::atomic<std::uint64_t> busy_ns_{0}, slot_wait_ns_{0}, slot_acquisitions_{0};
};

}  // namespace mlpo::io
