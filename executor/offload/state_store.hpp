#pragma once
// StateStore: where every subgroup of one rank's optimizer state lives, and the transfers
// that move it. Subgroups on a `memory` tier are resident arrays in this process; subgroups
// on a file tier are extents of that tier's state file
//   <tier path>/mlpo/<run>/rank<r>.state      extent of subgroup s at extent(s) * extent_bytes
// and, with fp32 gradient flushing (baseline), of its gradient file
//   <tier path>/mlpo/<run>/rank<r>.grad       extent of subgroup s at extent(s) * array_bytes
// (names from io::state_file_name and io::grad_file_name, executor/io/tier_layout.hpp).
// Files are preallocated at construction, after a capacity check of every tier. The files of
// a `host` tier (a RAM-backed file system: their pages are memory already) are mapped into the
// process, and its subgroups are resident too: AdamW updates them in place in the file, with
// no I/O and no copy (updated_in_place(), core/tier_kind.hpp). The store owns the resident
// arrays and the mappings; the TierSet (which owns the files) must outlive it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "executor/io/mapped_file.hpp"
#include "executor/io/tier_set.hpp"
#include "executor/offload/internal/in_place_integrity.hpp"
#include "executor/offload/internal/placement_policy.hpp"
#include "core/rank_shard.hpp"
#include "core/subgroup_layout.hpp"

namespace mlpo::offload {

class StateStore {
 public:
  // `tiers` holds the plan's file tiers in plan order (memory tiers skipped); may be null
  // when every tier is `memory`. Throws mlpo::Error when a tier is short of space.
  StateStore(const Plan& plan, const RankShard& shard, io::TierSet* tiers, const std::string& run,
             bool fp32_grads);
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  const SubgroupLayout& layout() const { return layout_; }
  const PlacementPolicy& placement() const { return placement_; }
  const RankShard& shard() const { return shard_; }
  std::int64_t floats_per_array() const { return layout_.array_bytes() / 4; }

  // True when the subgroup is updated in place in process memory (memory tier, or a host
  // tier's mapped file): never read, written or cached by the pipeline.
  bool resident(std::int64_t subgroup) const {
    return in_place_[static_cast<std::size_t>(home(subgroup).tier)];
  }
  // The resident extent (p, m, v arrays, floats_per_array() apart) of a resident subgroup.
  float* resident_extent(std::int64_t subgroup);
  // Both throw mlpo::Error naming the file and the fix when a host tier's mapped file was
  // truncated (touching the missing pages would be SIGBUS): checked on every call.
  // Fp32 gradient array of a resident subgroup (fp32-gradient mode only).
  float* resident_grad(std::int64_t subgroup);

  // With CRC on (plan.crc), the chunk CRCs of every subgroup on a file tier, streamed or
  // mapped (the pipeline records and verifies them in AdamW's pass; TierIo does not check
  // their state extents: read_state/write_state use CrcBy::caller). chunk_checked(s): s is one.
  InPlaceIntegrity& chunk_integrity() { return integrity_; }
  bool chunk_checked(std::int64_t subgroup) const { return integrity_.tracks(subgroup); }
  // "tier 'shm' (<file>), subgroup 3 (bytes X..Y)": where a file-tier subgroup lives, for messages.
  std::string where(std::int64_t subgroup) const;

  // TierSet index of a subgroup's file tier (-1 on a memory tier).
  int io_tier(std::int64_t subgroup) const { return io_tier_of_plan_tier_[home(subgroup).tier]; }
  io::TierSet& tiers() { return *tiers_; }
  std::size_t io_tier_count() const { return tiers_ ? tiers_->size() : 0; }

  // Asynchronous whole-extent transfers of a non-resident subgroup; `buffer` holds
  // extent_bytes (state) or array_bytes (gradient), 4 KiB-aligned. The state's CRC is the
  // caller's when chunk_checked(s) (verify_chunks after a read); gradients are checked by TierIo.
  io::IoRequest read_state(std::int64_t subgroup, std::byte* buffer);
  io::IoRequest write_state(std::int64_t subgroup, const std::byte* buffer);
  io::IoRequest read_grad(std::int64_t subgroup, std::byte* buffer);
  io::IoRequest write_grad(std::int64_t subgroup, const std::byte* buffer);

 private:
  const SubgroupHome& home(std::int64_t s) const { return placement_.home(s); }

  RankShard shard_;
  SubgroupLayout layout_;
  PlacementPolicy placement_;
  io::TierSet* tiers_;
  std::vector<int> io_tier_of_plan_tier_;     // -1 for memory tiers
  std::vector<bool> in_place_;                // per plan tier: memory or mapped host tier
  std::vector<io::TierFile*> state_files_;    // per io tier
  std::vector<io::TierFile*> grad_files_;     // per io tier, fp32-gradient mode
  std::vector<std::int64_t> resident_index_;  // per subgroup: index into resident_, or -1
  std::unique_ptr<float[]> resident_;         // resident extents, back to back
  std::unique_ptr<float[]> resident_grads_;
  std::vector<std::unique_ptr<io::MappedFile>> state_maps_;  // per io tier, host tiers only
  std::vector<std::unique_ptr<io::MappedFile>> grad_maps_;   // per io tier, host tiers in fp32-gradient mode
  InPlaceIntegrity integrity_;
};

// Converts the plan's file tiers (memory tiers skipped) into I/O-engine tiers.
std::vector<io::Tier> io_tiers_of(const Plan& plan);

}  // namespace mlpo::offload
