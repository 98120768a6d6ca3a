#pragma once
// InPlaceIntegrity: the CRC32C records of the subgroups on file tiers with CRC on: those a
// `host` tier holds in its mapped state file (updated in place, never passing through the I/O
// engine) and the streamed ones (read into a pinned buffer, updated, written back; their
// state extents skip TierIo's per-extent CRC, io::CrcBy::caller). Per chunk of kChunk elements
// of a subgroup, the CRC32C of its p, m and v (each array's elements, not its padding). The
// pipeline records a subgroup whenever it leaves it (load_state, after AdamW) and verifies it
// before anything reads it (AdamW, visit_state), chunk by chunk in the same pass as AdamW,
// while the chunk is in cache: one pass over the bytes instead of three. A difference is an
// mlpo::Error naming the tier, the file, the subgroup's bytes, the array and the fix.
//
// Thread-safety: record/verify of different chunks may run at once (the slots are sized up
// front); mark_recorded and forget run on one thread between passes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/adam_split.hpp"

namespace mlpo::offload {

class InPlaceIntegrity {
 public:
  // Elements: p, m, v of a chunk fit in L2 together (core/adam_split.hpp models the split).
  static constexpr std::int64_t kChunk = kIntegrityChunkElements;

  InPlaceIntegrity() = default;
  // Makes room for `chunks` records of subgroup `s` (not yet recorded).
  void add_subgroup(std::int64_t s, std::int64_t elements);
  bool tracks(std::int64_t s) const {
    return s < static_cast<std::int64_t>(subgroups_.size()) &&
           !subgroups_[static_cast<std::size_t>(s)].chunks.empty();
  }

  // Chunk `chunk` of subgroup s holds n elements of p, m, v.
  void record(std::int64_t s, std::int64_t chunk, const float* p, const float* m, const float* v,
              std::size_t n);
  // Throws mlpo::Error (starting with `where`) when the chunk's bytes differ from its record;
  // does nothing before the subgroup's first complete record.
  void verify(std::int64_t s, std::int64_t chunk, const float* p, const float* m, const float* v,
              std::size_t n, const std::string& where) const;
  // The same two with the chunk's CRCs already taken (AdamW's fused pass, adamw_crc.hpp).
  void record_crcs(std::int64_t s, std::int64_t chunk, const std::array<std::uint32_t, 3>& crcs);
  void verify_crcs(std::int64_t s, std::int64_t chunk, const std::array<std::uint32_t, 3>& got, std::size_t n,
                   const std::string& where) const;
  // Every chunk of s has been recorded: later reads are verified.
  void mark_recorded(std::int64_t s) { subgroups_[static_cast<std::size_t>(s)].recorded = true; }

 private:
  struct Records {
    std::vector<std::array<std::uint32_t, 3>> chunks;
    bool recorded = false;
  };
  std::vector<Records> subgroups_;
};

}  // namespace mlpo::offload
