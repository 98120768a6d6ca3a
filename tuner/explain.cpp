#include "tuner/explain.hpp"

#include <cstdio>

#include "core/units.hpp"
#include "tuner/internal/appendf.hpp"

namespace mlpo::tune {

namespace {

std::string gbps(double bps) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GB/s", bps / 1e9);
  return s;
}

}  // namespace

std::string describe_plan(const Plan& p) {
  std::string out;
  appendf(out, "plan (%s mode): subgroups of %lld elements (%s of state each)\n", to_string(p.mode),
          (long long)p.subgroup_elements,
          format_bytes(static_cast<double>(p.subgroup_elements) * 12).c_str());
  for (const auto& t : p.tiers) {
    std::string limit = t.concurrency_limit > 0 ? std::to_string(t.concurrency_limit) : std::string("none");
    appendf(out, "  tier %-10s %5.1f %% of subgroups, node-wide concurrency limit %s\n", t.name.c_str(),
            100 * t.fraction, limit.c_str());
  }
  appendf(out,
          "  host cache %lld subgroups, %lld pinned buffers, prefetch depth %lld, order %s, gradients %s\n",
          (long long)p.host_cache_subgroups, (long long)p.buffers, (long long)p.prefetch_depth,
          to_string(p.order), to_string(p.gradients));
  appendf(out, "  slots %s, I/O blocks of %s, queue depth %lld\n", to_string(p.slot_scope),
          format_bytes(static_cast<double>(p.io_block_size)).c_str(), (long long)p.io_queue_depth);
  return out;
}

std::string predicted_iteration_line(const Prediction& p, bool update_only) {
  std::string out;
  appendf(out,
          "predicted (SimGrid): iteration %s = forward %s + backward %s + update %s; prefetch stall %s per "
          "rank\n",
          format_seconds(p.iteration_s).c_str(), format_seconds(p.forward_s).c_str(),
          format_seconds(p.backward_s).c_str(), format_seconds(p.update_s).c_str(),
          format_seconds(p.stall_s).c_str());
  if (update_only) out += "  (update only: forward and backward are not part of this prediction)\n";
  return out;
}

std::string search_counts_line(const TuneResult& r) {
  std::string out;
  appendf(
      out,
      "search: %zu analytic scores (%zu in a coordinate search over a grid of %.3g combinations, revisits "
      "counted; %zu in a finer search, %zu of whose plans beat the grid), %zu fit memory and capacity; "
      "%zu SimGrid runs (%zu refinement moves taken); %s\n",
      r.candidates, r.candidates - r.candidates_finer, r.space, r.candidates_finer, r.refined, r.feasible,
      r.simulated, r.simulated_moves, format_seconds(r.seconds).c_str());
  return out;
}

std::string explain(const TuneResult& r, const Profile& profile) {
  const bool gpus = !profile.gpus.empty();
  std::string out;
  const Prediction& p = r.chosen.simulated.prediction;
  const sim::AnalyticBreakdown& an = r.chosen.analytic;
  const bool update_only = r.chosen.plan.explanation.value("update_only", false);
  out += describe_plan(r.chosen.plan);
  out += predicted_iteration_line(p, update_only);
  out += format_fit(r.fit);

  out += "\nwhat bounds each phase (analytic model):\n";
  if (!update_only) {
    // ZeRO-3 collectives not hidden behind compute (several ranks only).
    auto exposed = [](double s) {
      return s > 0 ? ", exposed collectives " + format_seconds(s) : std::string();
    };
    appendf(out, "  forward   %-40s compute %s%s\n", an.forward_bound.c_str(),
            format_seconds(an.forward_compute_s).c_str(), exposed(an.forward_exchange_s).c_str());
    appendf(out, "  backward  %-40s compute %s, gradients to host %s, gradient norm %s, fp32 flush %s%s\n",
            an.backward_bound.c_str(), format_seconds(an.backward_compute_s).c_str(),
            format_seconds(an.grad_d2h_s).c_str(), format_seconds(an.grad_norm_s).c_str(),
            format_seconds(an.grad_flush_s).c_str(), exposed(an.backward_exchange_s).c_str());
  }
  // Without a GPU the new weights stay in host memory: there is no copy to name.
  const std::string to_gpu = gpus ? ", weights to GPU " + format_seconds(an.h2d_s) : std::string();
  appendf(out, "  update    %-40s CPU Adam %s%s, pipeline fill %s\n", an.update_bound.c_str(),
          format_seconds(an.adam_s).c_str(), to_gpu.c_str(), format_seconds(an.fill_s).c_str());
  appendf(out,
          "            physical limit max(bytes / sum of tier bandwidth, Adam) = %s; simulated update is "
          "%.2fx that\n",
          format_seconds(an.update_bound_s).c_str(),
          an.update_bound_s > 0 ? p.update_s / an.update_bound_s : 0.0);

  out += "\ntier split versus bandwidth (one node, all its ranks):\n";
  double total_bw = 0;
  for (const auto& t : an.tiers)
    total_bw += (t.read_bytes + t.write_bytes) > 0 ? (t.read_bytes + t.write_bytes) / t.seconds : 0;
  for (std::size_t i = 0; i < an.tiers.size(); ++i) {
    const auto& t = an.tiers[i];
    if (updated_in_place(r.chosen.plan.tiers[i].kind)) {
      appendf(out, "  %-10s share %5.1f %%  updated in place: no reads or writes, Adam time only\n",
              t.name.c_str(), 100 * r.chosen.plan.tiers[i].fraction);
      continue;
    }
    const double moved = t.read_bytes + t.write_bytes;
    const double bw = moved > 0 ? moved / t.seconds : 0;
    double busy = 0;
    if (i < r.chosen.simulated.tiers.size()) busy = r.chosen.simulated.tiers[i].busy_fraction;
    appendf(out,
            "  %-10s share %5.1f %%  moves %10s at %s (%4.1f %% of the node's aggregate)  busy %3.0f %% of "
            "the iteration\n",
            t.name.c_str(), 100 * r.chosen.plan.tiers[i].fraction, format_bytes(moved).c_str(),
            gbps(bw).c_str(), total_bw > 0 ? 100 * bw / total_bw : 0.0, 100 * busy);
  }
  out +=
      "  (a tier's share follows its bandwidth so all tiers finish together, a tier updated in place "
      "counting\n"
      "   at the rate Adam consumes state; capacity and host memory cap it)\n";

  out += "\nwhat each principle saves (the chosen plan simulated with it switched off):\n";
  const double chosen = score(p);
  for (const auto& ab : r.ablations) {
    if (!ab.applies) {
      appendf(out, "  %-22s not simulated: %s\n", ab.principle.c_str(), ab.why_not.c_str());
      continue;
    }
    appendf(out, "  %-22s without it (%s): %s, %+.1f %%\n", ab.principle.c_str(), ab.change.c_str(),
            format_seconds(ab.seconds).c_str(), chosen > 0 ? 100 * (ab.seconds - chosen) / chosen : 0.0);
  }
  if (r.baseline) {
    const double base = score(r.baseline->simulated.prediction);
    appendf(out,
            "\nbaseline (ZeRO-3 style on %s: fp32 gradients flushed, ascending, no cache, no limit): %s; "
            "predicted speedup %.2fx\n",
            r.baseline->plan.tiers[0].name.c_str(), format_seconds(base).c_str(),
            chosen > 0 ? base / chosen : 0.0);
  }
  out += '\n';
  out += search_counts_line(r);
  return out;
}

std::string search_summary(const TuneResult& r) {
  const Prediction& p = *r.chosen.plan.prediction;
  std::string out = describe_plan(r.chosen.plan);
  appendf(out, "predicted iteration %s (update %s)", format_seconds(p.iteration_s).c_str(),
          format_seconds(p.update_s).c_str());
  if (r.chosen.plan.baseline_prediction)
    appendf(out, "; baseline (on %s) %s, speedup %.2fx", r.baseline->plan.tiers[0].name.c_str(),
            format_seconds(r.chosen.plan.baseline_prediction->iteration_s).c_str(),
            r.chosen.plan.baseline_prediction->iteration_s / p.iteration_s);
  out += '\n';
  out += format_fit(r.fit);
  out += search_counts_line(r);
  return out;
}

}  // namespace mlpo::tune
