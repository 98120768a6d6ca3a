#include "tuner/internal/fit_report.hpp"

#include "core/units.hpp"
#include "tuner/internal/appendf.hpp"

namespace mlpo::tune {

namespace {

std::string use_text(const ResourceUse& u) {
  if (!u.known) return format_bytes(u.need) + " (not in the profile)";
  return format_bytes(u.need) + " of " + format_bytes(u.have) +
         (u.have > 0 ? " (" + std::to_string(static_cast<int>(100 * u.need / u.have + 0.5)) + " %)" : "");
}

Json use_json(const ResourceUse& u) {
  Json j{{"name", u.name}, {"need_bytes", u.need}};
  j["have_bytes"] = u.known ? Json(u.have) : Json(nullptr);
  return j;
}

}  // namespace

FitReport fit_report(const Accounting& a, const Plan& plan, const TuneRequest& request,
                     const Prediction& prediction) {
  FitReport fit;
  fit.cpu_backend = request.profile.gpus.empty();
  const HostMemoryNeed m = host_memory_need(a, plan, cpu_model_bytes(a, request));
  fit.host = ResourceUse{"host memory", m.total(), static_cast<double>(host_budget(request)), true};
  if (const std::optional<double> have = gpu_memory_budget(request))
    fit.gpu = ResourceUse{"GPU memory", gpu_memory_need(a, request.param_offload).total(), *have, true};
  for (std::size_t t = 0; t < plan.tiers.size(); ++t) {
    const TierProfile* tp = request.profile.find_tier(plan.tiers[t].name);
    fit.tiers.push_back(ResourceUse{plan.tiers[t].name, tier_bytes_needed(a, plan, t),
                                    tp ? static_cast<double>(tp->free_bytes) : 0.0, tp != nullptr});
  }
  fit.iteration_s = prediction.iteration_s;
  if (!request.options.update_only) {
    fit.tokens_per_iteration = static_cast<double>(a.tokens_per_iteration);
    if (prediction.iteration_s > 0) fit.tokens_per_s = fit.tokens_per_iteration / prediction.iteration_s;
  }
  return fit;
}

std::string format_fit(const FitReport& fit) {
  std::string out = "uses: host memory " + use_text(fit.host) + " per node";
  if (fit.cpu_backend) out += " (with the CPU backend's model: no GPU)";
  if (fit.gpu) out += ", GPU memory " + use_text(*fit.gpu) + " per GPU";
  out += "; ";
  for (std::size_t i = 0; i < fit.tiers.size(); ++i)
    out += (i ? ", " : "tier ") + fit.tiers[i].name + " " + use_text(fit.tiers[i]) +
           (fit.tiers[i].known ? " free" : "");
  out += "\n";
  if (fit.tokens_per_iteration > 0)
    appendf(out, "predicted throughput: %.0f tokens/s (%.0f tokens per %s iteration)\n", fit.tokens_per_s,
            fit.tokens_per_iteration, format_seconds(fit.iteration_s).c_str());
  return out;
}

Json to_json(const FitReport& fit) {
  Json tiers = Json::array();
  for (const auto& t : fit.tiers) tiers.push_back(use_json(t));
  Json j{{"host_memory", use_json(fit.host)},
         {"cpu_backend", fit.cpu_backend},
         {"tiers", tiers},
         {"tokens_per_iteration", fit.tokens_per_iteration},
         {"tokens_per_s", fit.tokens_per_s}};
  j["gpu_memory"] = fit.gpu ? use_json(*fit.gpu) : Json(nullptr);
  return j;
}

}  // namespace mlpo::tune
