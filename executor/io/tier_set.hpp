#pragma once
// TierSet: every tier of a plan, each driven by its own TierIo (ring + I/O thread), so all
// tiers stream at the same time and none waits on another. Built once from the plan's tier
// list; owns the TierIo objects; the PinnedBufferPool it is given must outlive it.
// Typical use by the offload engine:
//   TierSet tiers(plan_tiers, {.pool = &pool});
//   tiers.check_capacity(bytes_per_tier);                 // before anything is written
//   TierFile& f = tiers[i].open_file(state_file_name(run, rank), bytes_per_tier[i]);
//   RequestGroup g; g.add(tiers[i].read(f, off, len, lease.data())); g.wait();

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier.hpp"
#include "executor/io/tier_io.hpp"

namespace mlpo::io {

struct TierSetOptions {
  const PinnedBufferPool* pool = nullptr;                // registered as fixed buffers on every ring
  Diagnostics diagnostics = stderr_diagnostics("mlpo");  // O_DIRECT fallback and similar, once per tier
};

class TierSet {
 public:
  // Validates every tier (names unique, fields sane) and starts their engines. Throws
  // mlpo::Error naming the offending tier.
  explicit TierSet(std::vector<Tier> tiers, TierSetOptions options = {});

  std::size_t size() const { return tiers_.size(); }
  TierIo& operator[](std::size_t index) { return *tiers_.at(index); }
  const TierIo& operator[](std::size_t index) const { return *tiers_.at(index); }
  // Throws mlpo::Error when no tier has that name.
  TierIo& at(std::string_view name);

  // bytes_per_tier[i] = bytes tier i must still hold; see check_capacity() in capacity.hpp.
  void check_capacity(std::span<const std::uint64_t> bytes_per_tier) const;

 private:
  std::vector<std::unique_ptr<TierIo>> tiers_;
};

}  // namespace mlpo::io
