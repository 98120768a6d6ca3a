#include "simulator/analytic_model.hpp"

#include <algorithm>

#include "core/rates.hpp"
#include "core/units.hpp"
#include "simulator/internal/exchange_schedule.hpp"
#include "simulator/internal/simulation_rates.hpp"
#include "simulator/internal/workload.hpp"

namespace mlpo::sim {

namespace {

struct Bound {
  double seconds = 0;
  std::string what;
  void consider(double s, const std::string& name) {
    if (s > seconds) {
      seconds = s;
      what = name;
    }
  }
};

// A remote tier's share of the cluster-wide backbone per node, each direction (0: no cap).
double remote_share(const TierRates& tr, const Rates& rates, double nodes) {
  return tr.remote ? rates.remote_backbone_bps / nodes : 0.0;
}

double capped_bps(double bps, double cap) { return cap > 0 ? std::min(bps, cap) : bps; }

// What every phase's terms read: the plan, its rates and its workload, for one node.
struct Setting {
  const Accounting& a;
  const Plan& plan;
  const Rates& rates;
  const Workload& w;  // the schedule the SimGrid model runs too
  double R = 1;       // ranks per node
  double nodes = 1;
  double ppr = 0;  // parameters per rank
};

// ZeRO-3 collectives (several ranks with figures in the profile): each pass as the executor's
// exchange thread schedules it (simulator/internal/exchange_schedule.hpp); what compute does not hide
// is the exchange's share of the phase.
void consider_exchange(const Setting& s, AnalyticBreakdown& out, Bound& fwd, Bound& bwd) {
  const CollectiveCost cost = collective_cost_of(s.rates, s.w);
  if (!cost.modelled()) return;
  const double micro = static_cast<double>(s.w.micro_steps);
  const ComputeRates& c = s.rates.compute;
  const std::vector<PassPart> fwd_parts = forward_parts(s.w, c, cost);
  const std::vector<PassPart> bwd_parts = backward_parts(s.w, c, cost, false);
  const std::vector<PassPart> last_parts = backward_parts(s.w, c, cost, true);
  const double forward = micro * pass_seconds(fwd_parts, cost);
  const double backward = (micro - 1) * pass_seconds(bwd_parts, cost) + pass_seconds(last_parts, cost) +
                          small_collectives_s(cost);
  // What the schedule waits (beyond the parts' own work) and the collectives' core seconds.
  auto waits = [](const std::vector<PassPart>& parts) {
    return std::max(0.0, pass_seconds(parts) - pass_work_s(parts));
  };
  out.collective_wait_s = micro * waits(fwd_parts) + (micro - 1) * waits(bwd_parts) + waits(last_parts);
  out.exchange_core_s = micro * pass_core_seconds(fwd_parts, cost) +
                        (micro - 1) * pass_core_seconds(bwd_parts, cost) +
                        pass_core_seconds(last_parts, cost);
  out.grad_d2h_s = 0;  // the full fp32 gradients' copies are in the backward schedule
  out.forward_exchange_s = std::max(0.0, forward - out.forward_compute_s);
  out.backward_exchange_s = std::max(0.0, backward - out.backward_compute_s);
  fwd.consider(forward, "compute + ZeRO-3 all-gathers");
  bwd.consider(backward, "compute + ZeRO-3 all-gathers and reduce-scatters");
}

// Forward and backward (hardware FLOPs = forward + 3x forward with recompute): compute, the
// bf16 gradients' PCIe copy and, in flush-fp32 mode, the fp32 gradient flush.
void predict_forward_backward(const Setting& s, bool update_only, AnalyticBreakdown& out, Bound& fwd,
                              Bound& bwd) {
  const Accounting& a = s.a;
  const Rates& rates = s.rates;
  if (!update_only) {
    // Each part at the profile's rate for it (core/rates.hpp), over the micro-steps.
    const CollectiveCost none{};
    for (const PassPart& p : forward_parts(s.w, rates.compute, none)) out.forward_compute_s += p.compute_s;
    for (const PassPart& p : backward_parts(s.w, rates.compute, none, true))
      out.backward_compute_s += p.compute_s;
    out.forward_compute_s *= static_cast<double>(s.w.micro_steps);
    out.backward_compute_s *= static_cast<double>(s.w.micro_steps);
    if (rates.d2h_bps > 0)
      out.grad_d2h_s = s.ppr * kBf16Bytes * static_cast<double>(a.shape.grad_accum) / rates.d2h_bps;
  }
  fwd = Bound{out.forward_compute_s, rates.compute_on_gpu ? "GPU compute" : "CPU compute"};
  bwd = Bound{out.backward_compute_s, fwd.what};
  if (!update_only) consider_exchange(s, out, fwd, bwd);
  bwd.consider(out.grad_d2h_s, "PCIe device-to-host (bf16 gradients)");
  // The global gradient norm over the rank's bf16 shard, every rank of the node at once, once
  // backward is done (before the flush).
  if (!update_only && rates.grad_norm_eps > 0) {
    out.grad_norm_s = s.R * s.ppr / rates.grad_norm_eps;
    bwd = Bound{bwd.seconds + out.grad_norm_s, bwd.what + ", then the gradient norm"};
  }
  // Each streamed subgroup's fp32 gradients go to its own tier, the R ranks' at once, after
  // backward (the executor's flush_gradients, once the gradient norm is known): the slowest
  // tier's flush adds to the phase (resident subgroups keep theirs in memory). Update-only, the
  // term is still given (mlpo-run --update-only logs the flush apart), outside any phase.
  std::string flush_tier;
  for (std::size_t i = 0; i < s.plan.tiers.size(); ++i) {
    if (s.w.flush_elements[i] <= 0) continue;
    const TierRates& t = rates.tiers[i];
    const double seconds = s.R * s.w.flush_elements[i] * kFp32GradBytes /
                           capped_bps(t.write_bps(s.R), remote_share(t, rates, s.nodes));
    if (seconds > out.grad_flush_s) flush_tier = t.name;
    out.grad_flush_s = std::max(out.grad_flush_s, seconds);
  }
  if (out.grad_flush_s > 0 && !update_only)
    bwd = Bound{bwd.seconds + out.grad_flush_s, bwd.what + ", then the fp32 gradient flush to " + flush_tier};
  out.forward_bound = fwd.seconds > 0 ? fwd.what : "nothing (not predicted)";
  out.backward_bound = bwd.seconds > 0 ? bwd.what : "nothing (not predicted)";
}

// Tier i's update term: the node's ranks' bytes from the workload's steps, one reader and
// one writer per rank (as the executor) within the slot limit. A tier updated in place moves
// nothing and gets an empty term: its subgroups cost Adam time only.
TierTerm tier_term(const Setting& s, std::size_t i) {
  const TierRates& tr = s.rates.tiers[i];
  TierTerm term;
  term.name = tr.name;
  if (s.w.in_place[i]) return term;
  term.read_bytes = s.R * s.w.read_elements[i] * s.w.read_bytes_per_element;
  term.write_bytes = s.R * s.w.write_elements[i] * s.w.write_bytes_per_element;
  term.read_streams = s.R;
  term.write_streams = s.R;
  bool overlap = true;  // reads and writes in flight at once
  double k = static_cast<double>(s.plan.tiers[i].concurrency_limit);
  // A remote tier's slots are the cluster's (their lock files live on the shared file system):
  // a node holds k / nodes of them on average, and under one it holds one that share of the time.
  double duty = 1;
  if (tr.remote && k > 0) {
    k /= s.nodes;
    if (k < 1) duty = k, k = 1;
  }
  if (k > 0) {
    const auto reads = static_cast<double>(s.w.reads[i]), writes = static_cast<double>(s.w.writes[i]);
    if (s.plan.slot_scope == SlotScope::separate) {
      if (s.R > k) {
        term.handoffs_per_slot = s.R * std::max(reads, writes) / k;
        term.read_handoffs_per_slot = s.R * reads / k;
      }
      term.read_streams = std::min(term.read_streams, k);
      term.write_streams = std::min(term.write_streams, k);
    } else if (term.read_streams + term.write_streams > k) {
      term.handoffs_per_slot = s.R * (reads + writes) / k;
      term.read_handoffs_per_slot = s.R * reads / k;
      term.read_streams = term.write_streams = std::max(1.0, k / 2);
      overlap = k >= 2;  // one slot for both: a read and a write never overlap
    }
  }
  const double share = remote_share(tr, s.rates, s.nodes);
  term.read_bps = capped_bps(tr.read_bps(term.read_streams), share);
  term.write_bps = capped_bps(tr.write_bps(term.write_streams), share);
  if (term.read_bytes + term.write_bytes > 0)
    term.seconds = overlap ? tr.overlapped_seconds(term.read_bytes, term.write_bytes, term.read_streams,
                                                   term.write_streams, share)
                           : term.read_bytes / term.read_bps + term.write_bytes / term.write_bps;
  term.seconds /= duty;
  term.read_bps *= duty;
  term.write_bps *= duty;
  return term;
}

// Pipeline bound: a rank keeps at most min(d, tiers) reads in flight (one reader per tier,
// at most d misses ahead of Adam) and B buffers (each held from its read through Adam to its
// write), so it finishes at most min(reads / T_read, B / (T_read + T_adam + T_write))
// misses per second, T being a transfer's mean time over the streamed tiers (by fraction)
// at the per-stream mixed bandwidth of its tier. (It matters for shallow pipelines over
// several tiers, where a rank's few reads cannot keep every tier busy; the SimGrid model
// captures that more closely.) Tiers updated in place stream nothing and hold no buffer.
double pipeline_depth_s(const Setting& s, const std::vector<TierTerm>& terms, double adam_node) {
  const Plan& plan = s.plan;
  const bool flush = plan.gradients == GradientPolicy::flush_fp32;
  const double d = static_cast<double>(plan.prefetch_depth);
  const double sg_elems = static_cast<double>(std::min(plan.subgroup_elements, s.a.params_per_rank));
  double streamed = 0;  // the share of subgroups on streamed tiers
  for (std::size_t i = 0; i < plan.tiers.size(); ++i)
    if (!s.w.in_place[i]) streamed += plan.tiers[i].fraction;
  double mean_read_s = 0, mean_write_s = 0;
  double tiers_used = 0;
  for (std::size_t i = 0; i < plan.tiers.size(); ++i) {
    const double f = s.w.in_place[i] || streamed <= 0 ? 0.0 : plan.tiers[i].fraction / streamed;
    if (f <= 0) continue;
    tiers_used += 1;
    const TierTerm& term = terms[i];
    const TierRates& tr = s.rates.tiers[i];
    double read_bps = tr.read_bps_mixed(term.read_streams),
           write_bps = tr.write_bps_mixed(term.write_streams);
    if (!tr.measured_mixed()) read_bps = write_bps = tr.shared_bps(term.read_streams + term.write_streams);
    read_bps = capped_bps(read_bps, remote_share(tr, s.rates, s.nodes));
    write_bps = capped_bps(write_bps, remote_share(tr, s.rates, s.nodes));
    mean_read_s += f * sg_elems * (static_cast<double>(kOptimizerStateBytes) + (flush ? kFp32GradBytes : 0)) /
                   (read_bps / term.read_streams);
    mean_write_s +=
        f * sg_elems * static_cast<double>(kOptimizerStateBytes) / (write_bps / term.write_streams);
  }
  // Reads in flight per rank: at most the prefetch depth, and one per tier.
  const double reads_in_flight = std::max(1.0, std::min(d, tiers_used));
  const double adam_sg_s = s.rates.adam_work(sg_elems) / (adam_node / s.R) + s.rates.adam_call_s(sg_elems);
  const double per_subgroup_s =
      std::max(mean_read_s / reads_in_flight,
               (mean_read_s + adam_sg_s + mean_write_s) / static_cast<double>(plan.buffers));
  double misses = 0;
  for (const UpdateStep& step : s.w.steps) misses += !step.resident && !step.hit;
  return misses * per_subgroup_s;
}

// Pipeline fill: the first subgroup's read and the last one's write are not overlapped
// with anything (at the per-stream bandwidth of the node's busiest tier), nor the first
// subgroup's Adam.
double fill_s(const Setting& s, const std::vector<TierTerm>& terms, double bytes_moved, double adam_node) {
  const bool flush = s.plan.gradients == GradientPolicy::flush_fp32;
  const double sg = static_cast<double>(std::min(s.plan.subgroup_elements, s.a.params_per_rank));
  double fill = 0;
  if (bytes_moved > 0) {
    double per_stream_bps = 0;
    for (const auto& t : terms)
      if (t.read_bytes + t.write_bytes > 0)
        per_stream_bps = std::max(per_stream_bps, (t.read_bytes + t.write_bytes) / t.seconds / s.R);
    fill =
        sg * (static_cast<double>(kOptimizerStateBytes) * 2 + (flush ? kFp32GradBytes : 0)) / per_stream_bps;
  }
  fill += s.rates.adam_work(sg) / (adam_node / s.R) + s.rates.adam_call_s(sg);
  return fill;
}

// A rank's AdamW over all its subgroups as work at the node's Adam rate, step by step as the
// SimGrid model runs it (Rates::adam_work: a subgroup of fewer grains than threads keeps
// fewer threads busy).
double adam_work_per_rank(const Setting& s) {
  double work = 0;
  for (const UpdateStep& step : s.w.steps) work += s.rates.adam_work(static_cast<double>(step.elements));
  return work;
}

// One CPU rank's copies of its subgroups' new bf16 weights into the model's, after each AdamW
// (Rates::update_weight_copy_bps; 0 where there is no such copy).
double weight_copy_s(const Setting& s) {
  return s.rates.update_weight_copy_bps > 0 ? s.ppr * kBf16Bytes / s.rates.update_weight_copy_bps : 0.0;
}

// A rank's seconds waiting on its pool over all its subgroups' AdamW calls (Rates::adam_call_s);
// the ranks wait side by side.
double adam_wake_per_rank(const Setting& s) {
  double wake = 0;
  for (const UpdateStep& step : s.w.steps) wake += s.rates.adam_call_s(static_cast<double>(step.elements));
  return wake;
}

// A streamed tier's D seconds of transfers (at its idle rates) and the node's A seconds of
// CPU Adam (at its idle rate), when each slows the other while both run (the tier at x io,
// Adam at x ad: TierRates' update_interference) and the pipeline overlaps them as far as it
// can: o seconds together, then the rest of the longer one alone.
struct SharedTime {
  double together = 0;   // o = min(D / io, A / ad)
  double tier_busy = 0;  // D + o (1 - io)
  double adam_busy = 0;  // A + o (1 - ad)
  double both = 0;       // the union: D + A - o (io + ad - 1); max(D, A) when io = ad = 1
};

SharedTime time_shared(double tier_s, double adam_s, const TierRates& tr) {
  const double io = tr.io_ratio_adam_busy, ad = tr.adam_ratio_io_busy;
  SharedTime t;
  t.together = std::min(tier_s / io, adam_s / ad);
  t.tier_busy = tier_s + t.together * (1 - io);
  t.adam_busy = adam_s + t.together * (1 - ad);
  t.both = tier_s + adam_s - t.together * (io + ad - 1);
  return t;
}

// Update: the largest of the tiers' terms (each time-shared with CPU Adam), CPU Adam, the bf16
// weights' PCIe copy and the pipeline depth, plus the fill; and the update's physical limit
// (every tier at its peak, Adam at its rate).
void predict_update(const Setting& s, AnalyticBreakdown& out, Bound& upd) {
  const Rates& rates = s.rates;
  out.cache_hits = s.w.cache_hits;
  const double adam_node = rates.adam_node_eps(s.R);
  const double adam_idle_s =
      s.R * adam_work_per_rank(s) / adam_node + adam_wake_per_rank(s) + weight_copy_s(s);
  out.adam_s = adam_idle_s;
  double sum_peak_bw = 0;
  double bytes_moved = 0;
  for (std::size_t i = 0; i < s.plan.tiers.size(); ++i) {
    TierTerm term = tier_term(s, i);
    if (!s.w.in_place[i]) {
      const TierRates& tr = rates.tiers[i];
      const double transfer_s = term.seconds;
      const SharedTime shared = time_shared(transfer_s, adam_idle_s, tr);
      // Each slot handoff idles the tier; one after a read may wait for the subgroup's Adam
      // the read started (one rank's, slowed while the tier streams).
      const double sg = static_cast<double>(std::min(s.plan.subgroup_elements, s.a.params_per_rank));
      const double burst_s = rates.adam_work(sg) / (adam_node / s.R) / tr.adam_ratio_io_busy;
      const double handoff_s = term.handoffs_per_slot * tr.slot_handoff_s +
                               term.read_handoffs_per_slot * tr.slot_handoff_waits_adam * burst_s;
      term.seconds = shared.tier_busy;
      out.adam_s = std::max(out.adam_s, shared.adam_busy);
      const bool coupled = tr.io_ratio_adam_busy != 1 || tr.adam_ratio_io_busy != 1;
      std::string what = "tier " + term.name;
      if (coupled && transfer_s > 0) what += " time-shared with CPU Adam";
      if (handoff_s > 0) what += " (slot handoffs " + format_seconds(handoff_s) + ")";
      // A tier that moves nothing this iteration (every subgroup of it cached) is idle, never
      // the bound: its shared time is then CPU Adam's alone, which bounds as itself below.
      if (transfer_s > 0 || handoff_s > 0)
        upd.consider((coupled ? shared.both : transfer_s) + handoff_s, what);
      if (s.plan.tiers[i].fraction > 0)
        sum_peak_bw += capped_bps(tr.interleaved_bps(term.read_streams), remote_share(tr, rates, s.nodes));
      bytes_moved += term.read_bytes + term.write_bytes;
    }
    out.tiers.push_back(std::move(term));
  }
  upd.consider(out.adam_s, "CPU Adam");
  if (rates.h2d_bps > 0) {
    out.h2d_s = s.ppr * kBf16Bytes / rates.h2d_bps;
    upd.consider(out.h2d_s, "PCIe host-to-device (bf16 weights)");
  }
  upd.consider(pipeline_depth_s(s, out.tiers, adam_node), "pipeline depth (prefetch " +
                                                              std::to_string(s.plan.prefetch_depth) + ", " +
                                                              std::to_string(s.plan.buffers) + " buffers)");
  out.fill_s = fill_s(s, out.tiers, bytes_moved, adam_node);
  // The physical limit: every tier at its idle peak, Adam at its idle rate.
  out.update_bound_s = std::max(bytes_moved > 0 ? bytes_moved / sum_peak_bw : 0.0, adam_idle_s);
  out.update_bound = upd.what.empty() ? "nothing" : upd.what;
}

}  // namespace

AnalyticBreakdown analyze(const Accounting& a, const Profile& profile, const Plan& plan,
                          const SimulationOptions& options) {
  const Rates rates = simulation_rates(profile, plan, options, a);
  // The schedule the SimGrid model runs too: per-tier elements read, written back and
  // flushed, from the placement, the cache replay and the tiers updated in place.
  const Workload w = make_workload(a, plan);
  const Setting s{a,
                  plan,
                  rates,
                  w,
                  static_cast<double>(rates.ranks_per_node),
                  static_cast<double>(rates.nodes),
                  static_cast<double>(a.params_per_rank)};
  AnalyticBreakdown out;
  out.warnings = rates.warnings;
  Bound fwd, bwd, upd;
  predict_forward_backward(s, options.update_only, out, fwd, bwd);
  predict_update(s, out, upd);

  Prediction& p = out.prediction;
  p.model = "analytic";
  p.forward_s = fwd.seconds;
  p.backward_s = bwd.seconds;
  // Plus starting and joining the pipeline's reader and writer threads (each rank its own).
  p.update_s = upd.seconds + out.fill_s + static_cast<double>(w.pipeline_threads()) * rates.thread_start_s;
  // Per rank, as the executor logs it: its AdamW calls, not the weight copy after each.
  p.adam_s = std::max(0.0, out.adam_s - weight_copy_s(s));
  p.iteration_s = p.forward_s + p.backward_s + p.update_s;
  for (const auto& t : out.tiers) p.tiers.push_back({t.name, t.read_bytes, t.write_bytes, t.seconds});
  if (!options.update_only)
    for (std::size_t i = 0; i < p.tiers.size(); ++i)
      p.tiers[i].write_bytes += s.R * w.flush_elements[i] * w.grad_flush_bytes_per_element;
  return out;
}

}  // namespace mlpo::sim
