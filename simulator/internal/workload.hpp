#pragma once
// Workload: what one rank does in one iteration under a plan, derived from the model's
// accounting — per-layer forward/backward FLOPs and gradient bytes, the subgroups of the
// rank's optimizer-state shard, where each subgroup lives (weighted interleaving), and the
// update's steps in this iteration's order with cache hits and write-backs. Pure arithmetic;
// both the analytic and the SimGrid model read it, so they describe the same schedule.
//
// Subgroups on a tier updated in place (kinds memory and host, core/tier_kind.hpp) are
// resident: Adam updates them where they live, so their steps read and write nothing and they
// never enter the host cache; they cost Adam time only.
//
// Steady state: the simulated iteration follows one that ran in the opposite order
// (alternating) or the same order (ascending), and the host cache starts holding the last
// `host_cache_subgroups` subgroups that iteration updated (never written, as in the executor).
// Order, hits and evictions come from the executor's own model, core/update_order.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/plan.hpp"
#include "core/rates.hpp"
#include "core/subgroup_layout.hpp"

namespace mlpo::sim {

struct LayerWork {
  std::string name;                       // "embedding", "layer 12", "lm_head"
  ComputePart part = ComputePart::layer;  // which of the profile's compute rates times it
  double forward_flops = 0;               // per rank per micro-step
  double backward_flops = 0;              // per rank per micro-step, including the recomputed forward
  double grad_elements = 0;               // this rank's shard of the layer's gradients
  // ZeRO-3 (several ranks): the layer's full weights, all-gathered before it runs (the head
  // of tied embeddings gathers the embedding too), and whether backward gathers them again
  // (every part but the embedding, as executor/model's weight_walk). The reduce-scatter
  // takes the layer's full fp32 gradients: grad_elements x ranks.
  double weight_elements = 0;
  bool gathered_in_backward = true;
};

// One step of the update phase: the subgroup Adam works on, and the subgroup written back
// after it (itself without a cache; the evicted least-recently-updated one with a cache;
// none for a resident subgroup).
struct UpdateStep {
  std::int64_t subgroup = 0;
  int tier = 0;                      // index into plan.tiers
  std::int64_t elements = 0;         // Adam's work
  bool resident = false;             // on a tier updated in place: no read, no write
  bool hit = false;                  // in the host cache: no read
  std::int64_t write_subgroup = -1;  // -1: nothing written after this step
  int write_tier = 0;
  std::int64_t write_elements = 0;  // moved: the written subgroup's whole extent
};

struct Workload {
  Accounting accounting;
  std::int64_t ranks_per_node = 1;
  std::int64_t ranks = 1;         // all nodes' ranks (ZeRO-3 world)
  std::int64_t micro_steps = 1;   // grad_accum
  std::vector<LayerWork> layers;  // forward order
  std::int64_t params_per_rank = 0;
  // The shard (params_per_rank) cut into the plan's subgroups, as the executor cuts its own
  // (core/subgroup_layout.hpp); the last subgroup may be shorter.
  SubgroupLayout layout{0, 1};
  std::vector<int> placement;     // tier index of every subgroup
  std::vector<UpdateStep> steps;  // this iteration's update, in order
  std::int64_t cache_hits = 0;    // steps served from the host cache (resident ones are not hits)
  // Per tier (plan order), from the steps: extent elements read (misses) and written back in the
  // update, and elements whose fp32 gradients backward writes there (flush-fp32; each
  // subgroup's to its own tier). All zero on a tier updated in place.
  std::vector<bool> in_place;
  std::vector<double> read_elements;
  std::vector<double> write_elements;
  std::vector<double> flush_elements;
  std::vector<std::int64_t> reads;     // per tier: the update's reads (misses) of one rank
  std::vector<std::int64_t> writes;    // and its write-backs (not the flush)
  double read_bytes_per_element = 12;  // 12, or 16 when fp32 gradients are re-read (baseline)
  double write_bytes_per_element = 12;
  double grad_flush_bytes_per_element = 0;  // 4 when fp32 gradients are flushed in backward

  double forward_flops() const;  // per rank, all micro-steps
  double backward_flops() const;
  // Elements a subgroup moves on a tier: the executor reads and writes whole extents
  // (core/subgroup_layout.hpp), the short last subgroup's too.
  std::int64_t extent_elements() const { return layout.subgroup_elements(); }
  // Threads one rank's update pipeline starts and joins: a reader per tier it reads from and
  // a writer per tier it writes back to (executor/offload/internal/pipeline_readers.hpp, _writers.hpp).
  std::int64_t pipeline_threads() const;
};

// Throws mlpo::Error when the plan and the accounting disagree (e.g. subgroups larger than a
// rank's shard are fine; zero ranks are not).
Workload make_workload(const Accounting& accounting, const Plan& plan);

}  // namespace mlpo::sim
