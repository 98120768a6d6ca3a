#include "tuner/simulate_plan.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tuner/internal/appendf.hpp"
#include "tuner/explain.hpp"

namespace mlpo::tune {

namespace {

Json shortfall_json(const std::optional<Shortfall>& s) {
  if (!s) return nullptr;
  return Json{
      {"resource", s->resource}, {"need_bytes", s->need}, {"have_bytes", s->have}, {"detail", s->detail}};
}

// "1 node", "4 GPUs".
std::string counted(std::int64_t n, const std::string& what) {
  std::string text = std::to_string(n) + " " + what;
  if (n == 1) return text;
  const auto space = what.find(' ');  // "rank (CPU backend...)": the plural goes on the noun
  return space == std::string::npos
             ? text + "s"
             : std::to_string(n) + " " + what.substr(0, space) + "s" + what.substr(space);
}

}  // namespace

PlanSimulation simulate_plan(const Plan& plan, const ModelSpec& model, const Profile& profile,
                             const sim::SimulationOptions& options, std::int64_t host_memory_budget,
                             bool param_offload) {
  validate(plan);
  check_param_offload(param_offload, plan.cluster);
  const Accounting a = account(model, plan.cluster);
  if (a.params.total != plan.model_params)
    throw Error("--simulate: the plan is for " + std::to_string(plan.model_params) +
                " parameters but model '" + model.name + "' has " + std::to_string(a.params.total) +
                "; pass the plan's model with --model");
  PlanSimulation s;
  s.plan = plan;
  s.update_only = options.update_only;
  TuneRequest request;
  request.model = model;
  request.shape = plan.cluster;
  request.profile = profile;
  request.host_memory_budget = host_memory_budget;
  request.options = options;
  request.options.param_offload = param_offload;
  request.param_offload = param_offload;
  s.shortfall = check_fits(a, plan, request);
  s.analytic = sim::analyze(a, profile, plan, request.options);
  s.simulated = sim::simulate(a, profile, plan, request.options);
  s.fit = fit_report(a, plan, request, s.simulated.prediction);
  return s;
}

std::string format_simulation(const PlanSimulation& s) {
  std::string out = describe_plan(s.plan);
  const Prediction& p = s.simulated.prediction;
  const sim::AnalyticBreakdown& an = s.analytic;
  const ClusterShape& c = s.plan.cluster;
  appendf(out, "cluster: %s x %s, micro-batch %lld, grad-accum %lld\n", counted(c.nodes, "node").c_str(),
          counted(c.ranks_per_node, s.fit.cpu_backend ? "rank (CPU backend, no GPU)" : "GPU").c_str(),
          (long long)c.micro_batch, (long long)c.grad_accum);
  out += predicted_iteration_line(p, s.update_only);
  out += "bound per phase (analytic model):\n";
  if (!s.update_only) {
    // With ZeRO-3 collectives (several ranks): the compute and what the collectives add to it.
    auto split = [](double compute_s, double exposed_s) {
      return exposed_s > 0 ? " (compute " + format_seconds(compute_s) + ", exposed collectives " +
                                 format_seconds(exposed_s) + ")"
                           : std::string();
    };
    appendf(out, "  forward   %s%s\n", an.forward_bound.c_str(),
            split(an.forward_compute_s, an.forward_exchange_s).c_str());
    appendf(out, "  backward  %s%s\n", an.backward_bound.c_str(),
            split(an.backward_compute_s, an.backward_exchange_s).c_str());
  }
  appendf(out, "  update    %s; physical limit %s (simulated update is %.2fx that)\n",
          an.update_bound.c_str(), format_seconds(an.update_bound_s).c_str(),
          an.update_bound_s > 0 ? p.update_s / an.update_bound_s : 0.0);
  const std::int64_t ranks = s.plan.cluster.ranks_per_node;
  const std::string wait_label =
      ranks > 1 ? "slot wait (summed over " + std::to_string(ranks) + " ranks)" : std::string("slot wait");
  out += "per tier (node 0, all its ranks):\n";
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const TierPrediction& t = p.tiers[i];
    const double wait = i < s.simulated.tiers.size() ? s.simulated.tiers[i].slot_wait_s : 0.0;
    const double busy = i < s.simulated.tiers.size() ? s.simulated.tiers[i].busy_fraction : 0.0;
    if (updated_in_place(s.plan.tiers[i].kind)) {
      appendf(out, "  %-10s updated in place: no reads or writes\n", t.name.c_str());
      continue;
    }
    appendf(out, "  %-10s read %10s  written %10s  busy %s (%3.0f %% of the iteration)  %s %s\n",
            t.name.c_str(), format_bytes(t.read_bytes).c_str(), format_bytes(t.write_bytes).c_str(),
            format_seconds(t.busy_s).c_str(), 100 * busy, wait_label.c_str(), format_seconds(wait).c_str());
  }
  appendf(out, "cache hits per rank: %lld\n", (long long)s.simulated.cache_hits);
  out += format_fit(s.fit);
  if (s.shortfall)
    appendf(out, "does not fit: %s short by %s (needs %s, has %s: %s)\n", s.shortfall->resource.c_str(),
            format_bytes(s.shortfall->need - s.shortfall->have).c_str(),
            format_bytes(s.shortfall->need).c_str(), format_bytes(s.shortfall->have).c_str(),
            s.shortfall->detail.c_str());
  else if (s.update_only)
    out += "fits host memory and tier capacity (GPU memory not checked: --update-only needs none)\n";
  else if (s.fit.cpu_backend)
    out += "fits host memory (the CPU backend's model included) and tier capacity\n";
  else
    out += "fits host memory, tier capacity and GPU memory\n";
  return out;
}

Json to_json(const PlanSimulation& s) {
  Json tiers = Json::array();
  const Prediction& p = s.simulated.prediction;
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    Json t = Json{{"name", p.tiers[i].name},
                  {"kind", to_string(s.plan.tiers[i].kind)},
                  {"read_bytes", p.tiers[i].read_bytes},
                  {"write_bytes", p.tiers[i].write_bytes},
                  {"busy_s", p.tiers[i].busy_s}};
    if (i < s.simulated.tiers.size()) {
      t["busy_fraction"] = s.simulated.tiers[i].busy_fraction;
      t["slot_wait_s"] = s.simulated.tiers[i].slot_wait_s;
    }
    tiers.push_back(std::move(t));
  }
  Json j{{"schema", "mlpo.simulation/1"},
         {"model", s.plan.model_name},
         {"cluster", Json{{"nodes", s.plan.cluster.nodes},
                          {"gpus_per_node", s.plan.cluster.ranks_per_node},
                          {"micro_batch", s.plan.cluster.micro_batch},
                          {"grad_accum", s.plan.cluster.grad_accum}}},
         {"update_only", s.update_only},
         {"prediction", to_json(p)},
         {"bound", Json{{"forward", s.analytic.forward_bound},
                        {"backward", s.analytic.backward_bound},
                        {"update", s.analytic.update_bound}}},
         {"update_bound_s", s.analytic.update_bound_s},
         {"analytic", to_json(s.analytic.prediction)},
         {"tiers", tiers},
         {"cache_hits", s.simulated.cache_hits},
         {"fits", !s.shortfall.has_value()},
         {"shortfall", shortfall_json(s.shortfall)},
         {"fit", to_json(s.fit)},
         {"warnings", s.simulated.warnings}};
  // Several ranks with collective figures: what the ZeRO-3 collectives add to compute.
  if (s.analytic.forward_exchange_s > 0 || s.analytic.backward_exchange_s > 0)
    j["collectives"] = Json{{"forward_exposed_s", s.analytic.forward_exchange_s},
                            {"backward_exposed_s", s.analytic.backward_exchange_s}};
  return j;
}

}  // namespace mlpo::tune
