#include "simulator/workload.hpp"

#include <algorithm>
#include <list>
#include <unordered_map>

#include "core/error.hpp"
#include "core/subgroup_placement.hpp"

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

std::int64_t Workload::subgroup_size(std::int64_t subgroup) const {
  return std::min(subgroup_elements, params_per_rank - subgroup * subgroup_elements);
}

std::vector<int> place_subgroups(const std::vector<double>& fractions, std::int64_t subgroups) {
  return interleave_subgroups(fractions, subgroups);
}

std::int64_t steady_cache_hits(const Plan& plan, std::int64_t subgroups) {
  const std::int64_t c = std::min(plan.host_cache_subgroups, subgroups);
  if (c >= subgroups) return subgroups;
  // Alternating: the previous iteration ended on the subgroups this one starts with.
  // Ascending: the cache holds the tail, and every miss at the head evicts the oldest of
  // it, always just before Adam would reach it, so nothing hits.
  return plan.order == OrderPolicy::alternating ? c : 0;
}

namespace {

// Least-recently-updated cache of subgroup ids, as the executor keeps it.
class SubgroupCache {
 public:
  explicit SubgroupCache(std::int64_t capacity) : capacity_(capacity) {}
  bool contains(std::int64_t s) const { return where_.count(s) != 0; }
  // Marks `s` most recently updated; returns the evicted subgroup, or -1.
  std::int64_t touch(std::int64_t s) {
    if (auto it = where_.find(s); it != where_.end()) {
      order_.erase(it->second);
    }
    order_.push_back(s);
    where_[s] = std::prev(order_.end());
    if (static_cast<std::int64_t>(order_.size()) <= capacity_) return -1;
    const std::int64_t victim = order_.front();
    order_.pop_front();
    where_.erase(victim);
    return victim;
  }

 private:
  std::int64_t capacity_;
  std::list<std::int64_t> order_;
  std::unordered_map<std::int64_t, std::list<std::int64_t>::iterator> where_;
};

std::vector<std::int64_t> update_order(std::int64_t n, bool descending) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = descending ? n - 1 - i : i;
  return order;
}

}  // namespace

Workload make_workload(const Accounting& a, const Plan& plan) {
  validate(plan);
  Workload w;
  w.accounting = a;
  w.ranks_per_node = a.shape.gpus_per_node;
  w.micro_steps = a.shape.grad_accum;
  w.params_per_rank = a.params_per_rank;
  const double ranks = static_cast<double>(a.shape.ranks());
  const double tokens = static_cast<double>(a.shape.micro_batch * a.shape.seq_len);
  const ModelSpec& s = a.spec;

  // Forward FLOPs per token: 2 per weight in a matmul, plus attention scores and weighted
  // sum; backward is 2x forward plus the recomputed forward (per-layer checkpointing).
  // These sum to Accounting::hardware_flops_per_token.
  auto layer = [&](std::string name, double fwd_per_token, double params) {
    w.layers.push_back({std::move(name), fwd_per_token * tokens, 3.0 * fwd_per_token * tokens, params / ranks});
  };
  layer("embedding", 0, static_cast<double>(a.params.embedding));
  const double attn = 4.0 * static_cast<double>(a.shape.seq_len) * static_cast<double>(s.hidden);
  for (std::int64_t l = 0; l < s.layers; ++l)
    layer("layer " + std::to_string(l), 2.0 * static_cast<double>(a.params.per_layer) + attn,
          static_cast<double>(a.params.per_layer));
  const double head = static_cast<double>(s.vocab * s.hidden);
  const double final_norm = static_cast<double>(s.hidden);
  layer("lm_head", 2.0 * (head + final_norm), static_cast<double>(a.params.lm_head) + final_norm);

  w.subgroup_elements = plan.subgroup_elements;
  w.subgroups_per_rank = (a.params_per_rank + plan.subgroup_elements - 1) / plan.subgroup_elements;
  std::vector<double> fractions;
  for (const auto& t : plan.tiers) fractions.push_back(t.fraction);
  w.placement = place_subgroups(fractions, w.subgroups_per_rank);

  const bool flush = plan.gradients == GradientPolicy::flush_fp32;
  w.read_bytes_per_element = static_cast<double>(kOptimizerStateBytes + (flush ? kFp32GradBytes : 0));
  w.write_bytes_per_element = static_cast<double>(kOptimizerStateBytes);
  w.grad_flush_bytes_per_element = flush ? static_cast<double>(kFp32GradBytes) : 0.0;

  // Replay the previous iteration to fill the cache, then record this one.
  const std::int64_t n = w.subgroups_per_rank;
  const bool alternate = plan.order == OrderPolicy::alternating;
  SubgroupCache cache(plan.host_cache_subgroups);
  for (std::int64_t s_id : update_order(n, alternate)) cache.touch(s_id);
  for (std::int64_t s_id : update_order(n, false)) {
    UpdateStep step;
    step.subgroup = s_id;
    step.tier = w.placement[static_cast<std::size_t>(s_id)];
    step.elements = w.subgroup_size(s_id);
    step.hit = cache.contains(s_id);
    const std::int64_t victim = plan.host_cache_subgroups == 0 ? s_id : cache.touch(s_id);
    if (victim >= 0) {
      step.write_subgroup = victim;
      step.write_tier = w.placement[static_cast<std::size_t>(victim)];
      step.write_elements = w.subgroup_size(victim);
    }
    w.cache_hits += step.hit ? 1 : 0;
    w.steps.push_back(step);
  }
  return w;
}

}  // namespace mlpo::sim
