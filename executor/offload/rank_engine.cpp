#include "executor/offload/rank_engine.hpp"

#include <algorithm>

namespace mlpo::offload {

namespace {
io::SlotScope io_scope(SlotScope s) { return s == SlotScope::combined ? io::SlotScope::combined : io::SlotScope::separate; }
}  // namespace

RankEngine::RankEngine(const Plan& plan, const RankShard& shard, const std::string& run, ThreadPool& threads)
    : plan_(plan), cache_(plan.host_cache_subgroups) {
  PipelineOptions popts;
  popts.buffers = plan.buffers;
  popts.prefetch_depth = plan.prefetch_depth;
  popts.cache_subgroups = plan.host_cache_subgroups;
  popts.gradients = plan.gradients;

  const SubgroupLayout layout(shard.elements, plan.subgroup_elements);
  pool_ = std::make_unique<io::PinnedBufferPool>(std::max<std::uint64_t>(pipeline_pool_bytes(layout, popts), 4096));
  std::vector<io::Tier> io_tiers = io_tiers_of(plan);
  if (!io_tiers.empty()) tiers_.emplace(io_tiers, io::TierSetOptions{pool_.get()});
  std::vector<io::TierSlots*> slots;
  std::size_t io_index = 0;
  for (const auto& t : plan.tiers) {
    if (t.kind == TierKind::memory) continue;
    auto& tier_io = (*tiers_)[io_index++];
    if (t.concurrency_limit > 0) {
      slot_sets_.push_back(std::make_unique<io::TierSlots>(tier_io.tier(), static_cast<unsigned>(t.concurrency_limit),
                                                           io_scope(plan.slot_scope), &tier_io.counters()));
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
