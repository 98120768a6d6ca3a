#pragma once
// RankEngine: everything one rank's update phase needs, built from a plan in one place — the
// pinned buffer pool, the plan's file tiers (TierSet, with their node-wide TierSlots), the
// StateStore that places the rank's subgroups, the UpdatePipeline and the SubgroupCache
// model. It owns them all (members are declared in dependency order, so they are destroyed
// in reverse); the ThreadPool for AdamW is passed in. Used by the update-only run and by
// training, so both drive exactly the same engine.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/thread_pool.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_set.hpp"
#include "executor/io/tier_slots.hpp"
#include "core/rank_shard.hpp"
#include "executor/offload/state_store.hpp"
#include "core/update_order.hpp"
#include "executor/offload/update_pipeline.hpp"

namespace mlpo::offload {

// Bytes the state files of this run's `host` tiers already hold for `shard` (a restart under
// the same run name): memory the run has taken already, which a host memory check counts as
// available to it.
std::uint64_t host_tier_bytes_held(const Plan& plan, const RankShard& shard, const std::string& run);

class RankEngine {
 public:
  // Tier files are <tier path>/mlpo/<run>/rank<r>.state (see StateStore). Throws mlpo::Error
  // for a tier that cannot be opened or is short of space. Nothing is initialised: call
  // pipeline().initialize() or load_state() before the first update.
  RankEngine(const Plan& plan, const RankShard& shard, const std::string& run, ThreadPool& threads);
  RankEngine(const RankEngine&) = delete;
  RankEngine& operator=(const RankEngine&) = delete;

  const Plan& plan() const { return plan_; }
  UpdatePipeline& pipeline() { return *pipeline_; }

  // The schedule of update iteration `iteration` (0-based): the plan's order for that
  // iteration through the cache model (which it advances).
  std::vector<UpdateStep> plan_iteration(std::int64_t iteration);

 private:
  Plan plan_;
  std::unique_ptr<io::PinnedBufferPool> pool_;
  std::optional<io::TierSet> tiers_;
  std::vector<std::unique_ptr<io::TierSlots>> slot_sets_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<UpdatePipeline> pipeline_;
  SubgroupCache cache_;
};

}  // namespace mlpo::offload
