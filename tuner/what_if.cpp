#include "tuner/what_if.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tuner/internal/appendf.hpp"
#include "tuner/explain.hpp"

namespace mlpo::tune {

namespace {

TuneOutcome tune_outcome(const TuneRequest& request) {
  TuneOutcome out;
  try {
    out.result = tune(request);
  } catch (const Error& e) {
    out.infeasible = e.what();
  }
  return out;
}

// The phases a row of the table shows, read from a prediction.
struct PhaseRow {
  const char* name;
  double (*of)(const Prediction&);
};

const PhaseRow kPhases[] = {
    {"forward", [](const Prediction& p) { return p.forward_s; }},
    {"backward", [](const Prediction& p) { return p.backward_s; }},
    {"update", [](const Prediction& p) { return p.update_s; }},
    {"iteration", [](const Prediction& p) { return p.iteration_s; }},
};

std::string cell(const TuneOutcome& o, double (*of)(const Prediction&), bool baseline) {
  if (!o.result) return "does not fit";
  if (baseline) {
    if (!o.result->baseline) return "none";
    return format_seconds(of(o.result->baseline->simulated.prediction));
  }
  return format_seconds(of(o.result->chosen.simulated.prediction));
}

std::string change(const TuneOutcome& a, const TuneOutcome& b, double (*of)(const Prediction&),
                   bool baseline) {
  if (!a.result || !b.result) return "";
  if (baseline && (!a.result->baseline || !b.result->baseline)) return "";
  const double x =
      of(baseline ? a.result->baseline->simulated.prediction : a.result->chosen.simulated.prediction);
  const double y =
      of(baseline ? b.result->baseline->simulated.prediction : b.result->chosen.simulated.prediction);
  if (x <= 0) return y > 0 ? "new" : "";
  char s[32];
  std::snprintf(s, sizeof s, "%+.1f %%", 100 * (y - x) / x);
  return s;
}

// Tokens per second of the chosen plan: an iteration's tokens (every rank's micro-batches) over
// its predicted time; what a shape edit (nodes, micro-batch) is compared by.
double tokens_per_s(const TuneOutcome& o) {
  const ClusterShape& c = o.result->chosen.plan.cluster;
  const double t = o.result->chosen.simulated.prediction.iteration_s;
  return t > 0 ? static_cast<double>(c.micro_batch * c.seq_len * c.grad_accum * c.ranks()) / t : 0;
}

std::string throughput_row(const WhatIf& w) {
  const auto text = [](const TuneOutcome& o) {
    if (!o.result) return std::string("does not fit");
    char s[32];
    std::snprintf(s, sizeof s, "%.0f", tokens_per_s(o));
    return std::string(s);
  };
  std::string change;
  if (w.before.result && w.after.result && tokens_per_s(w.before) > 0) {
    char s[32];
    std::snprintf(s, sizeof s, "%+.1f %%", 100 * (tokens_per_s(w.after) / tokens_per_s(w.before) - 1));
    change = s;
  }
  std::string out;
  appendf(out, "  %-22s %14s %16s %10s\n", "tokens/s (cluster)", text(w.before).c_str(),
          text(w.after).c_str(), change.c_str());
  return out;
}

Json outcome_json(const TuneOutcome& o) {
  if (!o.result) return Json{{"fits", false}, {"error", o.infeasible}};
  Json j{{"fits", true}, {"plan", to_json(o.result->chosen.plan)}};
  j["prediction"] = to_json(o.result->chosen.simulated.prediction);
  if (o.result->baseline) j["baseline_prediction"] = to_json(o.result->baseline->simulated.prediction);
  j["tokens_per_s"] = tokens_per_s(o);
  return j;
}

}  // namespace

Scenario scenario_of(const TuneRequest& request) {
  return Scenario{request.profile, request.shape, request.options.remote_backbone_gbps};
}

TuneRequest on_scenario(TuneRequest request, const Scenario& scenario) {
  request.profile = scenario.profile;
  request.shape = scenario.shape;
  request.options.remote_backbone_gbps = scenario.remote_backbone_gbps;
  return request;
}

WhatIf what_if(const TuneRequest& in, const std::vector<ScenarioEdit>& edits) {
  if (edits.empty()) throw Error("--what-if: give at least one edit, e.g. --what-if tier.nvme.read_gbps*2");
  TuneRequest request = in;
  request.ablations = false;
  WhatIf w;
  w.update_only = request.options.update_only;
  w.edited = scenario_of(request);
  for (const ScenarioEdit& e : edits) {
    apply(e, w.edited);
    w.edits.push_back(e.text);
  }
  if (request.progress) request.progress("tuning the machine as profiled");
  w.before = tune_outcome(request);
  if (request.progress) request.progress("tuning the machine with the edits");
  w.after = tune_outcome(on_scenario(request, w.edited));
  return w;
}

std::string format_what_if(const WhatIf& w) {
  std::string edits;
  for (const auto& e : w.edits) edits += (edits.empty() ? "" : ", ") + e;
  std::string out = "what-if: " + edits + " (each side tuned from scratch)\n";
  appendf(out, "  %-22s %14s %16s %10s\n", "predicted", "as profiled", "with the edits", "change");
  for (const PhaseRow& row : kPhases) {
    if (w.update_only && (&row == &kPhases[0] || &row == &kPhases[1])) continue;  // not predicted
    appendf(out, "  %-22s %14s %16s %10s\n", row.name, cell(w.before, row.of, false).c_str(),
            cell(w.after, row.of, false).c_str(), change(w.before, w.after, row.of, false).c_str());
  }
  appendf(out, "  %-22s %14s %16s %10s\n", "baseline iteration", cell(w.before, kPhases[3].of, true).c_str(),
          cell(w.after, kPhases[3].of, true).c_str(), change(w.before, w.after, kPhases[3].of, true).c_str());
  if (!w.update_only) out += throughput_row(w);
  const auto side = [&out](const char* name, const TuneOutcome& o) {
    out += std::string("\n") + name + ": ";
    if (!o.result) {
      out += "no plan fits: " + o.infeasible + "\n";
      return;
    }
    out += "the best plan\n" + describe_plan(o.result->chosen.plan);
  };
  side("as profiled", w.before);
  side("with the edits", w.after);
  return out;
}

Json to_json(const WhatIf& w) {
  return Json{{"edits", w.edits},
              {"update_only", w.update_only},
              {"as_profiled", outcome_json(w.before)},
              {"with_edits", outcome_json(w.after)}};
}

}  // namespace mlpo::tune
