#pragma once
// IdRanges: what the CUDA backend knows of the i32 id tensors (tokens, targets) it copied from
// host memory — the smallest and largest id, read on the host during the copy — so that the
// vocabulary check of embedding and cross-entropy needs no device round trip for ids the host
// has just uploaded (four blocking read-backs per micro-batch otherwise). Host-side bookkeeping
// only: no CUDA call, testable anywhere.
//
// Invariant: an entry describes the device memory exactly as the upload left it. Any other write
// the backend makes into device memory (a copy, fill, cast, an asynchronous copy, a new
// allocation at a reused address) forgets every entry it overlaps, so a stale range is never
// used; the check then falls back to the device.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mlpo::gpu {

struct IdRange {
  std::int32_t min = 0, max = 0;
};

class IdRanges {
 public:
  // `count` ids were just copied from `host` to `device`.
  void record(const void* device, std::int64_t count, const std::int32_t* host);
  // Device bytes [device, device + bytes) were written by something other than an upload.
  void forget(const void* device, std::size_t bytes);
  // The range of the ids at `device` when exactly these `count` ids were uploaded and not
  // written since; none otherwise (or for an empty tensor).
  std::optional<IdRange> find(const void* device, std::int64_t count) const;

  static constexpr std::size_t kMaxEntries = 16;  // the oldest is dropped beyond this

 private:
  struct Entry {
    std::uintptr_t begin, end;  // bytes
    IdRange range;
  };
  std::vector<Entry> entries_;
};

}  // namespace mlpo::gpu
