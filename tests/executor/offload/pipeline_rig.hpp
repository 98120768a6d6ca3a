#pragma once
// Rig: one rank's update engine over a plan's tiers (pool, TierSet, StateStore, pipeline,
// cache model) with synthetic initial weights and gradients, for pipeline tests.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/thread_pool.hpp"
#include "core/update_order.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_set.hpp"
#include "core/rank_shard.hpp"
#include "executor/offload/state_store.hpp"
#include "executor/offload/update_pipeline.hpp"
#include "executor/update_only/synthetic_gradients.hpp"

namespace mlpo::offload::testing {

struct Rig {
  Rig(const Plan& plan_in, std::int64_t elements)
      : plan(plan_in),
        shard(shard_for(elements, 1, 0)),
        layout(shard.elements, plan.subgroup_elements),
        options{plan.buffers, plan.prefetch_depth, plan.host_cache_subgroups, plan.gradients},
        pool(pipeline_pool_bytes(layout, options)),
        tiers(io_tiers_of(plan), io::TierSetOptions{&pool, Diagnostics{}}),
        store(plan, shard, &tiers, "test", plan.gradients == GradientPolicy::flush_fp32),
        threads(2),
        pipeline(store, pool, std::vector<io::TierSlots*>(tiers.size(), nullptr), threads, options),
        cache(plan.host_cache_subgroups),
        grads(static_cast<std::size_t>(elements)) {
    pipeline.initialize([](std::int64_t i) { return update_only::synthetic_initial_weight(3, i); });
    update_only::synthetic_gradients(3, 1, 0, grads, threads);
  }
  UpdateStats step(std::int64_t iteration) {
    AdamWParams adam;
    adam.step = iteration + 1;
    return step(iteration, adam);
  }
  // With `weights_written`, the new bf16 weights go to `weights` and it is called per subgroup.
  UpdateStats step(std::int64_t iteration, const AdamWParams& adam,
                   const std::function<void(const Subgroup&)>& weights_written = {}) {
    if (weights_written) weights.resize(grads.size());
    return pipeline.update(schedule(iteration), grads, adam,
                           weights_written ? std::span<bf16>(weights) : std::span<bf16>(), weights_written);
  }
  // The plan's order for `iteration` through the cache model (which it advances).
  std::vector<UpdateStep> schedule(std::int64_t iteration) {
    return cache.plan_iteration(update_order(plan.order, iteration, layout.count()),
                                [&](std::int64_t s) { return store.resident(s); });
  }
  Plan plan;
  RankShard shard;
  SubgroupLayout layout;
  PipelineOptions options;
  io::PinnedBufferPool pool;
  io::TierSet tiers;
  StateStore store;
  ThreadPool threads;
  UpdatePipeline pipeline;
  SubgroupCache cache;
  std::vector<bf16> grads;
  std::vector<bf16> weights;
};

}  // namespace mlpo::offload::testing
