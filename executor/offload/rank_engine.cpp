#include "executor/offload/rank_engine.hpp"

#include <algorithm>
#include <filesystem>

#include "core/diagnostics.hpp"
#include "core/host_memory.hpp"
#include "executor/io/tier_layout.hpp"
#include "executor/offload/host_memory_need.hpp"

namespace mlpo::offload {

std::uint64_t host_tier_bytes_held(const Plan& plan, const RankShard& shard, const std::string& run) {
  std::uint64_t held = 0;
  for (const auto& t : plan.tiers) {
    if (t.kind != TierKind::host) continue;
    std::error_code ec;
    const auto size =
        std::filesystem::file_size(std::filesystem::path(t.path) / io::state_file_name(run, shard.rank), ec);
    if (!ec) held += size;
  }
  return held;
}

namespace {
// Refuses the plan before anything is allocated when the engine's host memory
// (host_memory_need) exceeds MemAvailable. The state files a host tier of this run already
// holds (a restart) are memory taken already: they count as available to themselves.
void check_host_memory_for(const Plan& plan, const RankShard& shard, const std::string& run) {
  const std::optional<std::int64_t> available = host_memory_available();
  if (!available) {
    stderr_diagnostics("mlpo").warning(
        "/proc/meminfo", "/proc/meminfo has no MemAvailable; the plan's host memory is not checked");
    return;
  }
  check_host_memory(host_memory_need(plan, shard),
                    static_cast<std::uint64_t>(*available) + host_tier_bytes_held(plan, shard, run),
                    "rank " + std::to_string(shard.rank));
}

}  // namespace

RankEngine::RankEngine(const Plan& plan, const RankShard& shard, const std::string& run, ThreadPool& threads)
    : plan_(plan), cache_(plan.host_cache_subgroups) {
  PipelineOptions popts;
  popts.buffers = plan.buffers;
  popts.prefetch_depth = plan.prefetch_depth;
  popts.cache_subgroups = plan.host_cache_subgroups;
  popts.gradients = plan.gradients;

  check_host_memory_for(plan, shard, run);
  const SubgroupLayout layout(shard.elements, plan.subgroup_elements);
  pool_ = std::make_unique<io::PinnedBufferPool>(
      std::max<std::uint64_t>(pipeline_pool_bytes(layout, popts), 4096));
  std::vector<io::Tier> io_tiers = io_tiers_of(plan);
  if (!io_tiers.empty()) tiers_.emplace(io_tiers, io::TierSetOptions{pool_.get()});
  std::vector<io::TierSlots*> slots;
  std::size_t io_index = 0;
  for (const auto& t : plan.tiers) {
    if (t.kind == TierKind::memory) continue;
    auto& tier_io = (*tiers_)[io_index++];
    if (t.concurrency_limit > 0) {
      slot_sets_.push_back(std::make_unique<io::TierSlots>(
          tier_io.tier(), static_cast<unsigned>(t.concurrency_limit), plan.slot_scope, &tier_io.counters()));
      slots.push_back(slot_sets_.back().get());
    } else {
      slots.push_back(nullptr);
    }
  }
  store_ = std::make_unique<StateStore>(plan, shard, tiers_ ? &*tiers_ : nullptr, run,
                                        plan.gradients == GradientPolicy::flush_fp32);
  pipeline_ = std::make_unique<UpdatePipeline>(*store_, *pool_, std::move(slots), threads, popts);
}

std::vector<UpdateStep> RankEngine::plan_iteration(std::int64_t iteration) {
  return cache_.plan_iteration(update_order(plan_.order, iteration, store_->layout().count()),
                               [&](std::int64_t s) { return store_->resident(s); });
}

}  // namespace mlpo::offload
