#include "tuner/sensitivity.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "core/error.hpp"
#include "core/svg.hpp"
#include "core/units.hpp"
#include "simulator/iteration_model.hpp"
#include "simulator/simulation_process.hpp"
#include "tuner/internal/appendf.hpp"
#include "tuner/what_if.hpp"

namespace mlpo::tune {

namespace {

// One move of one resource: the scenario with it applied.
struct Move {
  std::size_t row = 0;
  bool up = false;
  Scenario scenario;
};

// "nvme0 60.0 % k=4 + lustre 40.0 % k=8; 64 Mi-element subgroups, cache 100, 4 buffers,
// prefetch 2": the plan in one line, to say what a re-tune picked.
std::string plan_line(const Plan& p) {
  std::string out;
  for (const auto& t : p.tiers) {
    appendf(out, "%s%s %.1f %%", out.empty() ? "" : " + ", t.name.c_str(), 100 * t.fraction);
    if (t.concurrency_limit > 0) appendf(out, " k=%lld", (long long)t.concurrency_limit);
  }
  appendf(out, "; subgroups of %lld, cache %lld, %lld buffers, prefetch %lld, %s, %s",
          (long long)p.subgroup_elements, (long long)p.host_cache_subgroups, (long long)p.buffers,
          (long long)p.prefetch_depth, to_string(p.order), to_string(p.gradients));
  return out;
}

// A re-tune in a child process: its score and plan, or why nothing fits.
std::function<Json()> search_job(const TuneRequest& request) {
  return [request] {
    try {
      const TuneResult r = tune(request);
      return Json{{"fits", true},
                  {"seconds", score(r.chosen.simulated.prediction)},
                  {"plan", plan_line(r.chosen.plan)}};
    } catch (const Error& e) {
      return Json{{"fits", false}, {"why", e.what()}};
    }
  };
}

double relative(const MovedPrediction& m, double base) {
  return m.fits && base > 0 ? (m.seconds - base) / base : std::numeric_limits<double>::infinity();
}

// What bounds the plan: the largest change of its own prediction (a side where it no longer
// fits says nothing about its speed).
double impact_of(const SensitivityRow& row, double base) {
  double impact = 0;
  for (const auto* side : {&row.kept_down, &row.kept_up})
    if (side->fits) impact = std::max(impact, std::fabs(relative(*side, base)));
  return impact;
}

std::string change_text(const MovedPrediction& m, double base) {
  if (!m.fits) return "no fit";
  const double pct = 100 * relative(m, base);
  if (std::fabs(pct) < 0.05) return "0";
  char s[32];
  std::snprintf(s, sizeof s, "%+.1f %%", pct);
  return s;
}

std::string value_text(const SensitivityRow& row) {
  if (row.resource.unit == "bytes") return format_bytes(row.value);
  return svg::compact_number(row.value) + " " + row.resource.unit;
}

Json moved_json(const MovedPrediction& m) {
  Json j{{"fits", m.fits}};
  if (m.fits)
    j["seconds"] = m.seconds;
  else
    j["why"] = m.why;
  if (!m.plan.empty()) j["plan"] = m.plan;
  if (!m.tuned) j["searched"] = false;
  return j;
}

// The kept plan on every moved scenario: does it fit, and its SimGrid prediction.
void predict_kept(const Accounting& a, const TuneRequest& request, const Plan& plan,
                  const std::vector<Move>& moves, SensitivityResult& result) {
  std::vector<Profile> profiles;
  std::vector<std::size_t> simulated;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    SensitivityRow& row = result.rows[moves[i].row];
    MovedPrediction& kept = moves[i].up ? row.kept_up : row.kept_down;
    if (auto short_of = check_fits(a, plan, on_scenario(request, moves[i].scenario))) {
      kept.fits = false;
      kept.why = short_of->resource + " is short by " + format_bytes(short_of->need - short_of->have);
      continue;
    }
    profiles.push_back(moves[i].scenario.profile);
    simulated.push_back(i);
  }
  const auto sims = sim::simulate_on_each(a, profiles, plan, request.options, request.jobs);
  result.simulations += sims.size();
  for (std::size_t k = 0; k < sims.size(); ++k) {
    const Move& m = moves[simulated[k]];
    (m.up ? result.rows[m.row].kept_up : result.rows[m.row].kept_down).seconds = score(sims[k].prediction);
  }
}

// Every move re-tuned, but a move down whose kept plan did not slow down (see the header).
void retune(const TuneRequest& request, const std::string& kept_line, const std::vector<Move>& moves,
            SensitivityResult& result) {
  TuneRequest child = request;
  child.jobs = 1;
  child.top_k = 0;
  child.progress = nullptr;
  std::vector<std::function<Json()>> work;
  std::vector<std::size_t> searched;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    SensitivityRow& row = result.rows[moves[i].row];
    const MovedPrediction& kept = moves[i].up ? row.kept_up : row.kept_down;
    MovedPrediction& retuned = moves[i].up ? row.retuned_up : row.retuned_down;
    if (!moves[i].up && kept.fits && kept.seconds <= result.base_s) {
      retuned = kept;
      retuned.tuned = false;
      continue;
    }
    work.push_back(search_job(on_scenario(child, moves[i].scenario)));
    searched.push_back(i);
  }
  const std::vector<Json> found = sim::run_in_children(work, request.jobs);
  result.searches += found.size();
  for (std::size_t k = 0; k < found.size(); ++k) {
    const Move& m = moves[searched[k]];
    MovedPrediction& retuned = m.up ? result.rows[m.row].retuned_up : result.rows[m.row].retuned_down;
    retuned.fits = found[k].at("fits").get<bool>();
    if (!retuned.fits) {
      retuned.why = found[k].at("why").get<std::string>();
      continue;
    }
    retuned.seconds = found[k].at("seconds").get<double>();
    const std::string line = found[k].at("plan").get<std::string>();
    if (line != kept_line) retuned.plan = line;
    // The kept plan runs there too: a search that found nothing as fast keeps it.
    const MovedPrediction& kept = m.up ? result.rows[m.row].kept_up : result.rows[m.row].kept_down;
    if (kept.fits && kept.seconds <= retuned.seconds) {
      retuned.seconds = kept.seconds;
      retuned.plan.clear();
    }
  }
}

}  // namespace

std::vector<Resource> sensitivity_resources(const Scenario& s) {
  std::vector<Resource> out;
  for (const TierProfile& t : s.profile.tiers) {
    out.push_back({"tier " + t.name + " read", "tier." + t.name + ".read_gbps", "GB/s"});
    out.push_back({"tier " + t.name + " write", "tier." + t.name + ".write_gbps", "GB/s"});
  }
  const HostProfile& h = s.profile.host;
  if (!s.profile.gpus.empty()) {
    out.push_back({"GPU compute", "gpu.tflops", "TFLOP/s"});
    out.push_back({"PCIe", "gpu.pcie_gbps", "GB/s"});
  } else if (h.cpu_model.measured() || h.cpu_gemm_gflops.median > 0) {
    out.push_back({"CPU compute", "host.compute", "GFLOP/s"});
  }
  if (h.memcpy_gbps.median > 0 || h.memcpy_gbps_single.median > 0)
    out.push_back({"host memory bandwidth", "host.memcpy_gbps", "GB/s"});
  if (!h.adam_elements_per_s.empty()) out.push_back({"CPU AdamW", "host.adam", "elements/s"});
  const std::pair<const char*, const CollectiveRates*> paths[] = {{"host_mpi", &s.profile.comm.host_mpi},
                                                                  {"nccl", &s.profile.comm.nccl},
                                                                  {"inter_node", &s.profile.comm.inter_node}};
  for (const auto& [name, rates] : paths)
    if (rates->measured)
      out.push_back({std::string("comm ") + name, std::string("comm.") + name + ".gbps", "GB/s"});
  if (h.memory_bytes > 0) out.push_back({"host memory size", "host.memory", "bytes"});
  return out;
}

SensitivityResult sensitivity(const TuneRequest& in, double change) {
  if (!(change > 0 && change < 1)) throw Error("--change: must be in (0, 100) percent");
  const auto t0 = std::chrono::steady_clock::now();
  TuneRequest request = in;
  request.ablations = false;
  request.options.param_offload = in.param_offload;
  if (request.progress) request.progress("tuning the machine as profiled");
  const TuneResult base = tune(request);
  SensitivityResult result;
  result.plan = base.chosen.plan;
  result.base_s = score(base.chosen.simulated.prediction);
  result.change = change;
  result.update_only = request.options.update_only;
  result.prediction = base.chosen.simulated.prediction;
  result.forward_bound = base.chosen.analytic.forward_bound;
  result.backward_bound = base.chosen.analytic.backward_bound;
  result.bound = base.chosen.analytic.update_bound;
  result.simulations = base.simulated;
  result.searches = 1;

  const Scenario scenario = scenario_of(request);
  std::vector<Move> moves;
  for (const Resource& res : sensitivity_resources(scenario)) {
    SensitivityRow row;
    row.resource = res;
    row.value = current_value(scenario, res.target);
    if (row.value <= 0) continue;  // not measured: nothing to move
    for (const bool up : {false, true}) {
      ScenarioEdit e;
      e.kind = ScenarioEdit::Kind::scale;
      e.target = res.target;
      e.value = up ? 1 + change : 1 - change;
      e.text = res.target + "*" + std::to_string(e.value);
      Move m{result.rows.size(), up, scenario};
      apply(e, m.scenario);
      moves.push_back(std::move(m));
    }
    result.rows.push_back(std::move(row));
  }
  const Accounting a = account(request.model, request.shape);
  if (request.progress)
    request.progress("simulating the plan with each of " + std::to_string(result.rows.size()) +
                     " resources moved down and up");
  predict_kept(a, request, result.plan, moves, result);
  if (request.progress) request.progress("re-tuning each moved machine");
  retune(request, plan_line(result.plan), moves, result);
  for (SensitivityRow& row : result.rows) row.impact = impact_of(row, result.base_s);
  std::stable_sort(result.rows.begin(), result.rows.end(),
                   [](const SensitivityRow& x, const SensitivityRow& y) { return x.impact > y.impact; });
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::string format_sensitivity(const SensitivityResult& r) {
  std::string out;
  const int pct = static_cast<int>(std::lround(100 * r.change));
  appendf(out, "sensitivity: the chosen plan's predicted %s (%s) with each resource moved by %d %%\n",
          r.update_only ? "update" : "iteration", format_seconds(r.base_s).c_str(), pct);
  char down[16], up[16];
  std::snprintf(down, sizeof down, "-%d %%", pct);
  std::snprintf(up, sizeof up, "+%d %%", pct);
  appendf(out, "  %-30s %18s   %-8s %-9s   %-8s %-9s\n", "resource (most bounding first)", "now", down,
          "re-tuned", up, "re-tuned");
  for (const SensitivityRow& row : r.rows)
    appendf(out, "  %-30s %18s   %-8s %-9s   %-8s %-9s\n", row.resource.name.c_str(), value_text(row).c_str(),
            change_text(row.kept_down, r.base_s).c_str(), change_text(row.retuned_down, r.base_s).c_str(),
            change_text(row.kept_up, r.base_s).c_str(), change_text(row.retuned_up, r.base_s).c_str());
  out +=
      "  (change of the prediction; kept: this plan on the moved machine; re-tuned: the best plan there)\n";
  bool header = false;
  for (const SensitivityRow& row : r.rows)
    for (const auto* m : {&row.retuned_down, &row.retuned_up}) {
      if (m->plan.empty() && m->fits) continue;
      if (!header) out += "\nwhere re-tuning picks another plan (or nothing fits):\n";
      header = true;
      appendf(out, "  %s %c%d %%: %s\n", row.resource.name.c_str(), m == &row.retuned_down ? '-' : '+', pct,
              m->fits ? m->plan.c_str() : ("no plan fits: " + m->why).c_str());
    }
  const SensitivityRow* lever = nullptr;   // the largest gain from more of one resource, re-tuned
  const SensitivityRow* missed = nullptr;  // a re-tune on a smaller machine that beat the chosen plan
  for (const SensitivityRow& row : r.rows) {
    if (row.retuned_up.fits && (!lever || row.retuned_up.seconds < lever->retuned_up.seconds)) lever = &row;
    if (row.retuned_down.fits && row.retuned_down.seconds < r.base_s * (1 - 1e-3) &&
        (!missed || row.retuned_down.seconds < missed->retuned_down.seconds))
      missed = &row;
  }
  if (lever && lever->retuned_up.seconds < r.base_s)
    appendf(out, "\nthe largest gain, re-tuned: %s +%d %% -> %s (%s)\n", lever->resource.name.c_str(), pct,
            format_seconds(lever->retuned_up.seconds).c_str(),
            change_text(lever->retuned_up, r.base_s).c_str());
  if (missed)
    appendf(
        out,
        "note: with %s -%d %% the search found a plan predicted %s, faster than the chosen one on this "
        "machine: the search is heuristic (analytic prune, then SimGrid); a larger --simulate-top or that "
        "plan, simulated here with --simulate, may do better\n",
        missed->resource.name.c_str(), pct, format_seconds(missed->retuned_down.seconds).c_str());
  const Prediction& p = r.prediction;
  appendf(out, "\nbound per phase (analytic model, as --explain):");
  if (!r.update_only && p.forward_s > 0)
    appendf(out, " forward %s (%s), backward %s (%s),", r.forward_bound.c_str(),
            format_seconds(p.forward_s).c_str(), r.backward_bound.c_str(),
            format_seconds(p.backward_s).c_str());
  appendf(out, " update %s (%s)\n", r.bound.c_str(), format_seconds(p.update_s).c_str());
  appendf(out, "%zu SimGrid runs and %zu searches in %s\n", r.simulations, r.searches,
          format_seconds(r.seconds).c_str());
  return out;
}

Json to_json(const SensitivityResult& r) {
  Json rows = Json::array();
  for (const SensitivityRow& row : r.rows)
    rows.push_back(Json{{"resource", row.resource.name},
                        {"target", row.resource.target},
                        {"value", row.value},
                        {"unit", row.resource.unit},
                        {"impact", row.impact},
                        {"kept_down", moved_json(row.kept_down)},
                        {"kept_up", moved_json(row.kept_up)},
                        {"retuned_down", moved_json(row.retuned_down)},
                        {"retuned_up", moved_json(row.retuned_up)}});
  return Json{{"plan", to_json(r.plan)},
              {"predicted_s", r.base_s},
              {"change", r.change},
              {"update_only", r.update_only},
              {"update_bound", r.bound},
              {"resources", rows},
              {"forward_bound", r.forward_bound},
              {"backward_bound", r.backward_bound},
              {"prediction", to_json(r.prediction)},
              {"simulations", r.simulations},
              {"searches", r.searches},
              {"seconds", r.seconds}};
}

std::string tornado_svg(const SensitivityResult& r, const std::string& title) {
  constexpr double kLabel = 230, kPlot = 560, kRow = 26, kTop = 60;
  const double height = kTop + kRow * static_cast<double>(r.rows.size()) + 50;
  // The widest change any bar shows (no-fit sides draw nothing), at least 1 %.
  double widest = 0.01;
  for (const SensitivityRow& row : r.rows)
    for (const auto* m : {&row.kept_down, &row.kept_up, &row.retuned_down, &row.retuned_up})
      if (m->fits) widest = std::max(widest, std::fabs(relative(*m, r.base_s)));
  const std::vector<double> ticks = svg::nice_ticks(-widest, widest, 6);
  const double lo = ticks.front(), hi = ticks.back();
  const auto x_of = [&](double rel) { return kLabel + kPlot * (rel - lo) / (hi - lo); };
  std::string out;
  appendf(
      out,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kLabel + kPlot + 40, height);
  appendf(out, "<text x=\"10\" y=\"22\" font-size=\"15\">%s</text>\n", svg::escape(title).c_str());
  const int pct = static_cast<int>(std::lround(100 * r.change));
  appendf(
      out,
      "<text x=\"10\" y=\"42\">predicted %s %s; bars: the plan kept with each resource %d %% down (red) and "
      "up (green); ticks: re-tuned</text>\n",
      r.update_only ? "update" : "iteration", format_seconds(r.base_s).c_str(), pct);
  for (double t : ticks) {
    appendf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x_of(t),
            kTop - 5, x_of(t), height - 40);
    appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s%%</text>\n", x_of(t), height - 25,
            svg::compact_number(100 * t).c_str());
  }
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const SensitivityRow& row = r.rows[i];
    const double y = kTop + kRow * static_cast<double>(i);
    appendf(out, "<text x=\"10\" y=\"%.1f\">%s</text>\n", y + kRow * 0.65,
            svg::escape(row.resource.name).c_str());
    const std::pair<const MovedPrediction*, const char*> kept[] = {{&row.kept_down, "#d62728"},
                                                                   {&row.kept_up, "#2ca02c"}};
    for (const auto& [m, colour] : kept) {
      if (!m->fits) {
        appendf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">no fit</text>\n",
                m == &row.kept_down ? x_of(lo) : x_of(0) + 4, y + kRow * 0.65, colour);
        continue;
      }
      const double a = x_of(0), b = x_of(relative(*m, r.base_s));
      appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
              std::min(a, b), y + 4, std::max(std::fabs(b - a), 1.0), kRow - 8, colour);
    }
    for (const auto* m : {&row.retuned_down, &row.retuned_up})
      if (m->fits)
        appendf(
            out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-width=\"2\"/>\n",
            x_of(relative(*m, r.base_s)), y + 1, x_of(relative(*m, r.base_s)), y + kRow - 1);
  }
  appendf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n</svg>\n", x_of(0),
          kTop - 5, x_of(0), height - 40);
  return out;
}

}  // namespace mlpo::tune
