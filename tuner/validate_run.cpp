#include "tuner/validate_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/run_log_reader.hpp"
#include "core/units.hpp"
#include "simulator/analytic_model.hpp"

namespace mlpo::tune {

namespace {

// Adds `k`-th parts of the step's tier traffic to the run's tiers of the same name.
void add_tiers(std::vector<MeasuredTier>& tiers, const StepRecord& step, double k) {
  for (const StepTierRecord& t : step.tiers) {
    auto it =
        std::find_if(tiers.begin(), tiers.end(), [&](const MeasuredTier& x) { return x.name == t.name; });
    if (it == tiers.end()) {
      tiers.push_back({t.name});
      it = tiers.end() - 1;
    }
    it->read_bytes += static_cast<double>(t.read_bytes) / k;
    it->write_bytes += static_cast<double>(t.write_bytes) / k;
    it->busy_s += t.busy_s / k;
    it->slot_wait_s += t.slot_wait_s / k;
  }
}

}  // namespace

MeasuredRun read_run_log(const std::string& path) {
  const std::vector<StepRecord> steps = read_step_records(path);  // each step once: its last record
  MeasuredRun m;
  m.steps_logged = steps.size();
  const std::size_t first = steps.size() >= 2 ? 1 : 0;  // skip the warm-up step
  m.steps_used = steps.size() - first;
  const double k = static_cast<double>(m.steps_used);
  double steal_sum = 0;
  int steal_steps = 0;
  for (std::size_t i = first; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    m.forward_s += s.forward_s / k;
    m.backward_s += s.backward_s / k;
    m.update_s += s.update_s / k;
    m.prefetch_stall_s += s.prefetch_stall_s / k;
    m.cache_hits += static_cast<double>(s.cache_hits) / k;
    m.weight_fetch_bytes += static_cast<double>(s.weight_fetch_bytes.value_or(0)) / k;
    // Optional fields: averaged where every step has them, none otherwise.
    for (auto [logged, sum] : {std::pair{&s.adam_s, &m.adam_s}, std::pair{&s.gather_wait_s, &m.gather_wait_s},
                               std::pair{&s.gradient_copy_wait_s, &m.gradient_copy_wait_s},
                               std::pair{&s.exchange_cpu_s, &m.exchange_cpu_s},
                               std::pair{&s.gradient_flush_s, &m.gradient_flush_s}}) {
      if (!*logged)
        sum->reset();
      else if (*sum)
        **sum += **logged / k;
    }
    if (s.cpu_steal) {  // absent from steps shorter than a clock tick
      steal_sum += *s.cpu_steal;
      ++steal_steps;
    }
    add_tiers(m.tiers, s, k);
  }
  if (steal_steps > 0) m.cpu_steal = steal_sum / steal_steps;
  return m;
}

namespace {

// A number, or null where it is unknown.
Json number_or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

// A row of the report; its relative error is null where nothing was measured.
Json to_json(const Comparison& c) {
  return Json{{"quantity", c.quantity},
              {"predicted", c.predicted},
              {"measured", c.measured},
              {"relative_error", c.measured != 0 ? Json(c.relative_error()) : Json(nullptr)}};
}

std::string percent(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", 100 * share);
  return b;
}

// Said when the run and the profile lost shares of the CPU to the hypervisor that differ by
// more than kStealWarnShare: either side then ran on a different machine, in effect.
std::optional<std::string> steal_warning(const std::optional<double>& run,
                                         const std::optional<double>& profile) {
  if (!run) return std::nullopt;
  const std::string shares =
      "the hypervisor took " + percent(*run) + " of this machine's CPU time during the run's steps and " +
      (profile ? percent(*profile) : "an unknown share (no host.cpu_steal in the profile)") +
      " while mlpo-profile measured the host: ";
  const double prof = profile.value_or(0);
  if (*run - prof > kStealWarnShare)
    return shares + "CPU-bound phases ran up to " + percent((1 - prof) / (1 - *run) - 1) +
           " slower than profiled for that alone (the machine, not the model); validate on a quiet machine, "
           "or profile again just before the run";
  if (profile && prof - *run > kStealWarnShare)
    return shares + "the profile's CPU figures are up to " + percent(1 - (1 - prof) / (1 - *run)) +
           " low for that alone, so CPU-bound phases are predicted slower than the run could go (the "
           "machine, not the model); profile again on a quiet machine";
  return std::nullopt;
}

}  // namespace

ValidationReport validate_run(const std::string& log_path, const Plan& plan, const Profile& profile,
                              const ModelSpec& model, double remote_backbone_gbps) {
  ValidationReport r;
  r.measured = read_run_log(log_path);
  const Accounting a = account(model, plan.cluster);
  if (a.params.total != plan.model_params)
    throw Error("--plan: the plan is for " + std::to_string(plan.model_params) + " parameters but model '" +
                model.name + "' has " + std::to_string(a.params.total) +
                "; pass the plan's model with --model");
  // mlpo-run --update-only has no forward; it logs its gradient preparation (and the
  // baseline's fp32 flush) as backward, which the update-only prediction leaves out.
  r.update_only = r.measured.forward_s == 0;
  sim::SimulationOptions options;
  options.update_only = r.update_only;
  options.remote_backbone_gbps = remote_backbone_gbps;
  // One rank fetching weights per part: the run used --param-offload (ZeRO-3 ranks gather).
  options.param_offload = plan.cluster.ranks() == 1 && r.measured.weight_fetch_bytes > 0;
  r.predicted = sim::simulate(a, profile, plan, options);
  r.warnings = r.predicted.warnings;
  r.profile_cpu_steal = profile.host.cpu_steal;
  if (const std::optional<std::string> w = steal_warning(r.measured.cpu_steal, r.profile_cpu_steal))
    r.warnings.push_back(*w);
  const Prediction& p = r.predicted.prediction;
  if (!r.update_only) {
    r.rows.push_back({"forward_s", p.forward_s, r.measured.forward_s});
    r.rows.push_back({"backward_s", p.backward_s, r.measured.backward_s});
  }
  r.rows.push_back({"update_s", p.update_s, r.measured.update_s});
  if (!r.update_only)
    r.rows.push_back(
        {"iteration_s", p.iteration_s, r.measured.forward_s + r.measured.backward_s + r.measured.update_s});
  r.rows.push_back({"prefetch_stall_s", p.stall_s, r.measured.prefetch_stall_s});
  if (r.measured.adam_s) r.rows.push_back({"adam_s", p.adam_s, *r.measured.adam_s});
  // An update-only baseline flushes its fp32 gradients before the update (logged apart):
  // predicted by the analytic model's backward, whose last term it is. Update plus flush is
  // the step's optimizer-state I/O, the figure a baseline is compared by.
  if (r.update_only && plan.gradients == GradientPolicy::flush_fp32 && r.measured.gradient_flush_s &&
      *r.measured.gradient_flush_s > 0) {
    const double flush_s = sim::analyze(a, profile, plan, options).grad_flush_s;
    r.rows.push_back({"gradient_flush_s", flush_s, *r.measured.gradient_flush_s});
    r.rows.push_back(
        {"update_and_flush_s", p.update_s + flush_s, r.measured.update_s + *r.measured.gradient_flush_s});
  }
  // ZeRO-3: the exchange schedule's waits and (CPU backend) the collectives' core seconds,
  // from the analytic model, which breaks them out.
  if (!r.update_only && a.shape.ranks() > 1 && r.measured.gather_wait_s && r.measured.gradient_copy_wait_s) {
    const sim::AnalyticBreakdown an = sim::analyze(a, profile, plan, options);
    r.rows.push_back({"collective_wait_s", an.collective_wait_s,
                      *r.measured.gather_wait_s + *r.measured.gradient_copy_wait_s});
    if (r.measured.exchange_cpu_s && an.exchange_core_s > 0)
      r.rows.push_back({"exchange_cpu_s", an.exchange_core_s, *r.measured.exchange_cpu_s});
  }
  // The log sums every rank's bytes; the prediction is one node's (every node moves the same).
  const double nodes = static_cast<double>(std::max<std::int64_t>(1, plan.cluster.nodes));
  for (const MeasuredTier& t : r.measured.tiers) {
    for (const auto& pt : p.tiers) {
      if (pt.name != t.name) continue;
      r.rows.push_back({"tier " + t.name + " read_bytes", pt.read_bytes, t.read_bytes / nodes});
      r.rows.push_back({"tier " + t.name + " write_bytes", pt.write_bytes, t.write_bytes / nodes});
      r.rows.push_back({"tier " + t.name + " busy_s", pt.busy_s, t.busy_s});
    }
  }
  return r;
}

std::string format_report(const ValidationReport& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "run log: %zu steps, %zu averaged (first skipped as warm-up)%s\n",
                r.measured.steps_logged, r.measured.steps_used,
                r.update_only ? "; update-only run: predicting the update phase alone" : "");
  out += line;
  std::snprintf(line, sizeof line, "%-28s %14s %14s %9s\n", "quantity", "predicted", "measured", "error");
  out += line;
  for (const Comparison& c : r.rows) {
    const bool bytes = c.quantity.find("bytes") != std::string::npos;
    const std::string pred = bytes ? format_bytes(c.predicted) : format_seconds(c.predicted);
    const std::string meas = bytes ? format_bytes(c.measured) : format_seconds(c.measured);
    std::string err = "n/a";
    if (c.measured != 0) {
      char e[32];
      std::snprintf(e, sizeof e, "%+.1f %%", 100 * c.relative_error());
      err = e;
    }
    std::snprintf(line, sizeof line, "%-28s %14s %14s %9s\n", c.quantity.c_str(), pred.c_str(), meas.c_str(),
                  err.c_str());
    out += line;
  }
  if (r.measured.cpu_steal || r.profile_cpu_steal) {
    auto share = [](const std::optional<double>& v) { return v ? percent(*v) : std::string("unknown"); };
    out += "CPU time taken by the hypervisor (steal): run " + share(r.measured.cpu_steal) + ", profile " +
           share(r.profile_cpu_steal) + "\n";
  }
  return out;
}

Json to_json(const ValidationReport& r) {
  Json rows = Json::array();
  for (const Comparison& c : r.rows) rows.push_back(to_json(c));
  return Json{{"schema", "mlpo.validation/1"},
              {"steps_logged", r.measured.steps_logged},
              {"steps_used", r.measured.steps_used},
              {"update_only", r.update_only},
              {"rows", rows},
              {"cpu_steal", Json{{"run", number_or_null(r.measured.cpu_steal)},
                                 {"profile", number_or_null(r.profile_cpu_steal)}}},
              {"warnings", r.warnings}};
}

}  // namespace mlpo::tune
