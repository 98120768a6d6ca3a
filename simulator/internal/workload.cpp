#include "simulator/internal/workload.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/subgroup_placement.hpp"
#include "core/tier_kind.hpp"
#include "core/update_order.hpp"

namespace mlpo::sim {

double Workload::forward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops;
  return f * static_cast<double>(micro_steps);
}

double Workload::backward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.backward_flops;
  return f * static_cast<double>(micro_steps);
}

std::int64_t Workload::pipeline_threads() const {
  std::int64_t n = 0;
  for (std::size_t t = 0; t < reads.size(); ++t) n += (reads[t] > 0 ? 1 : 0) + (writes[t] > 0 ? 1 : 0);
  return n;
}

namespace {

// Per layer, in forward order. Forward FLOPs per token: 2 per weight in a matmul, plus
// attention scores and weighted sum (core/accounting.hpp); backward is 2x forward plus the
// recomputed forward (per-layer checkpointing). These sum to
// Accounting::hardware_flops_per_token. The embedding's lookup and the head are one compute
// part: the profile's measured rates give the head the embedding's time (core/rates.hpp).
std::vector<LayerWork> layer_work(const Accounting& a) {
  std::vector<LayerWork> layers;
  const double ranks = static_cast<double>(a.shape.ranks());
  const double tokens = static_cast<double>(a.shape.micro_batch * a.shape.seq_len);
  const ModelSpec& s = a.spec;
  auto layer = [&](std::string name, ComputePart part, double fwd_per_token, double params) {
    layers.push_back({std::move(name), part, fwd_per_token * tokens, 3.0 * fwd_per_token * tokens,
                      params / ranks, params, true});
  };
  layer("embedding", ComputePart::head, 0, static_cast<double>(a.params.embedding));
  layers.back().gathered_in_backward = false;
  const double layer_flops = layer_forward_flops_per_token(s, a.shape.seq_len);
  for (std::int64_t l = 0; l < s.layers; ++l)
    layer("layer " + std::to_string(l), ComputePart::layer, layer_flops,
          static_cast<double>(a.params.per_layer));
  const double final_norm = static_cast<double>(s.hidden);
  layer("lm_head", ComputePart::head, head_forward_flops_per_token(s),
        static_cast<double>(a.params.lm_head) + final_norm);
  if (s.tied_embeddings) layers.back().weight_elements += static_cast<double>(a.params.embedding);
  return layers;
}

// Appends the step the cache model planned to w.steps, and counts its reads, write-back and
// flushed gradients on their tiers.
void add_step(Workload& w, const mlpo::UpdateStep& planned, bool flush) {
  UpdateStep step;
  step.subgroup = planned.subgroup;
  step.tier = w.placement[static_cast<std::size_t>(step.subgroup)];
  step.elements = w.layout.subgroup(step.subgroup).elements;
  step.resident = planned.resident;
  step.hit = planned.hit;
  // Written after Adam: the subgroup this step evicts, or the subgroup itself when it
  // does not stay cached (no cache). A resident subgroup neither stays cached nor evicts
  // anything, and is not written either: Adam updated it where it lives.
  std::optional<std::int64_t> written = planned.evicted;
  if (!planned.resident && !planned.stays_cached) written = planned.subgroup;
  if (written) {
    step.write_subgroup = *written;
    step.write_tier = w.placement[static_cast<std::size_t>(*written)];
    step.write_elements = w.extent_elements();
    w.write_elements[static_cast<std::size_t>(step.write_tier)] += static_cast<double>(step.write_elements);
    ++w.writes[static_cast<std::size_t>(step.write_tier)];
  }
  if (!step.resident && !step.hit) {
    w.read_elements[static_cast<std::size_t>(step.tier)] += static_cast<double>(w.extent_elements());
    ++w.reads[static_cast<std::size_t>(step.tier)];
  }
  if (flush && !step.resident)
    w.flush_elements[static_cast<std::size_t>(step.tier)] += static_cast<double>(w.extent_elements());
  w.cache_hits += step.hit ? 1 : 0;
  w.steps.push_back(step);
}

// The executor's cache model (core/update_order.hpp), with its resident predicate: replay
// the previous iteration, an odd one (descending when alternating), to fill the cache, then
// record this one, an even one (ascending).
void plan_update(Workload& w, const Plan& plan, bool flush) {
  const std::int64_t n = w.layout.count();
  auto resident = [&w](std::int64_t s) {
    return w.in_place[static_cast<std::size_t>(w.placement[static_cast<std::size_t>(s)])];
  };
  SubgroupCache cache(plan.host_cache_subgroups);
  cache.plan_iteration(update_order(plan.order, 1, n), resident);
  for (const mlpo::UpdateStep& planned : cache.plan_iteration(update_order(plan.order, 2, n), resident))
    add_step(w, planned, flush);
}

}  // namespace

Workload make_workload(const Accounting& a, const Plan& plan) {
  validate(plan);
  Workload w;
  w.accounting = a;
  w.ranks_per_node = a.shape.ranks_per_node;
  w.ranks = a.shape.ranks();
  w.micro_steps = a.shape.grad_accum;
  w.params_per_rank = a.params_per_rank;
  w.layers = layer_work(a);

  w.layout = SubgroupLayout(a.params_per_rank, plan.subgroup_elements);
  std::vector<double> fractions;
  for (const auto& t : plan.tiers) fractions.push_back(t.fraction);
  w.placement = subgroup_placement(fractions, w.layout.count());  // the executor's too

  const bool flush = plan.gradients == GradientPolicy::flush_fp32;
  w.read_bytes_per_element = static_cast<double>(kOptimizerStateBytes + (flush ? kFp32GradBytes : 0));
  w.write_bytes_per_element = static_cast<double>(kOptimizerStateBytes);
  w.grad_flush_bytes_per_element = flush ? static_cast<double>(kFp32GradBytes) : 0.0;

  const std::size_t tiers = plan.tiers.size();
  for (const auto& t : plan.tiers) w.in_place.push_back(updated_in_place(t.kind));
  w.read_elements.assign(tiers, 0.0);
  w.write_elements.assign(tiers, 0.0);
  w.flush_elements.assign(tiers, 0.0);
  w.reads.assign(tiers, 0);
  w.writes.assign(tiers, 0);
  plan_update(w, plan, flush);
  return w;
}

}  // namespace mlpo::sim
