#include "tuner/search.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tuner/candidate_search.hpp"

namespace mlpo::tune {

namespace {

Json summary(const RankedPlan& r) {
  Json j = to_json(r.plan);
  j.erase("schema");
  j.erase("model");
  j.erase("cluster");
  j["prediction"] = to_json(r.simulated.prediction);
  return j;
}

}  // namespace

double score(const Prediction& p) { return p.iteration_s; }

TuneResult tune(const TuneRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  if (request.profile.tiers.empty())
    throw Error("--profile: the profile lists no storage tiers; re-run mlpo-profile with --tier PATH");
  if (request.profile.tiers.size() > 8)
    throw Error("--profile: more than 8 tiers; keep the ones worth using");
  check_param_offload(request.param_offload, request.shape);
  const Accounting a = account(request.model, request.shape);
  TuneResult result;
  auto progress = [&](const std::string& what) {
    if (request.progress) request.progress(what);
  };
  progress("scoring candidate plans (analytic model)");

  // 1. Analytic search (tuner/candidate_search.hpp): the best survivors, without
  // enumerating the space.
  const std::size_t wanted = static_cast<std::size_t>(std::max(1, request.simulate_top));
  CandidateSearchResult found = search_candidates(a, request, wanted);
  result.candidates = found.scored;
  result.feasible = found.feasible;
  result.space = found.space;
  result.refined = found.refined;
  if (found.best.empty()) report_infeasible(a, request);
  const std::size_t survivors = found.best.size();

  // 2. SimGrid ranking of the survivors, with the baseline in the same batch.
  std::vector<Plan> to_simulate;
  for (const ScoredPlan& p : found.best) to_simulate.push_back(p.plan);
  const std::optional<Plan> baseline = baseline_plan(a, request, to_simulate.front().subgroup_elements);
  if (baseline)
    to_simulate.push_back(*baseline);
  else
    result.warnings.push_back("no single tier holds the state and fp32 gradients: no baseline prediction");
  progress("simulating the best " + std::to_string(to_simulate.size()) + " plans with SimGrid");
  const std::vector<sim::SimulationResult> sims =
      sim::simulate_all(a, request.profile, to_simulate, request.options, request.jobs);
  result.simulated += sims.size();
  std::vector<RankedPlan> ranked;
  for (std::size_t i = 0; i < survivors; ++i)
    ranked.push_back({to_simulate[i], found.best[i].analytic, sims[i]});
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedPlan& x, const RankedPlan& y) {
    return score(x.simulated.prediction) < score(y.simulated.prediction);
  });
  if (baseline)
    result.baseline =
        RankedPlan{*baseline, sim::analyze(a, request.profile, *baseline, request.options), sims.back()};
  result.chosen = ranked.front();
  for (std::size_t i = 1; i < ranked.size() && static_cast<int>(i) <= request.top_k; ++i)
    result.alternatives.push_back(ranked[i]);

  // 3. Ablations: the chosen plan with each principle off (and its timeline if asked).
  const Plan& best = result.chosen.plan;
  std::vector<std::pair<Ablation, Plan>> ablations;
  auto add = [&](const char* principle, std::string change, const char* unused, bool uses, Plan p) {
    Ablation ab{principle, std::move(change), uses, 0, uses ? "" : unused};
    if (uses) {
      if (auto short_of = check_fits(a, p, request)) {
        ab.applies = false;
        ab.why_not = "switching it off does not fit: " + short_of->resource + " short by " +
                     format_bytes(short_of->need - short_of->have);
      }
    }
    ablations.push_back({std::move(ab), std::move(p)});
  };
  {
    // The plan's fastest tier alone (the first whose capacity can hold all the state).
    Plan p = best;
    std::string alone;
    for (const auto& t : best.tiers) {
      Plan single = best;
      single.tiers = {t};
      single.tiers[0].fraction = 1.0;
      if (!check_fits(a, single, request)) {
        p = single;
        alone = t.name;
        break;
      }
    }
    if (alone.empty()) {
      ablations.push_back(
          {Ablation{"multi-path tiers", "one tier", false, 0,
                    best.tiers.size() > 1 ? "no single tier of the plan can hold all the state"
                                          : "the plan uses one tier"},
           best});
    } else {
      add("multi-path tiers", alone + " alone", "the plan uses one tier", best.tiers.size() > 1, p);
    }
  }
  {
    Plan p = best;
    bool limited = false;
    for (auto& t : p.tiers) {
      limited |= t.concurrency_limit > 0;
      t.concurrency_limit = 0;
    }
    add("concurrency limit", "no limit", "the plan sets no limit", limited, p);
  }
  {
    Plan p = best;
    p.order = OrderPolicy::ascending;
    p.host_cache_subgroups = 0;
    add("cache-friendly order", "ascending, no cache", "the plan uses no cache",
        best.order == OrderPolicy::alternating && best.host_cache_subgroups > 0, p);
  }
  {
    Plan p = best;
    p.gradients = GradientPolicy::flush_fp32;
    add("delayed gradients", "fp32 gradients flushed and re-read", "the plan flushes fp32 gradients",
        best.gradients == GradientPolicy::delayed, p);
  }
  {
    Plan p = best;
    p.buffers = 2;
    p.prefetch_depth = 1;
    add("overlap", "prefetch depth 1, 2 buffers", "the plan already uses depth 1", best.prefetch_depth > 1,
        p);
  }
  std::vector<Plan> ablation_plans;
  for (const auto& [ab, p] : ablations)
    if (ab.applies) ablation_plans.push_back(p);
  sim::SimulationOptions with_timeline = request.options;
  with_timeline.timeline = true;
  progress("simulating the chosen plan with each principle switched off");
  std::vector<sim::SimulationResult> ab_sims =
      sim::simulate_all(a, request.profile, ablation_plans, request.options, request.jobs);
  result.simulated += ab_sims.size();
  std::size_t next = 0;
  for (auto& [ab, p] : ablations) {
    if (ab.applies) ab.seconds = score(ab_sims[next++].prediction);
    result.ablations.push_back(ab);
  }
  if (request.timeline) {
    result.chosen.simulated = sim::simulate(a, request.profile, best, with_timeline);
    ++result.simulated;
  }

  // 4. The plan file carries the prediction, the baseline's and the alternatives.
  Plan& out = result.chosen.plan;
  out.prediction = result.chosen.simulated.prediction;
  if (result.baseline) out.baseline_prediction = result.baseline->simulated.prediction;
  out.alternatives = Json::array();
  for (const auto& alt : result.alternatives) out.alternatives.push_back(summary(alt));
  Json abl = Json::array();
  for (const auto& ab : result.ablations)
    abl.push_back(ab.applies
                      ? Json{{"principle", ab.principle}, {"without", ab.change}, {"predicted_s", ab.seconds}}
                      : Json{{"principle", ab.principle}, {"not_simulated", ab.why_not}});
  out.explanation = Json{{"update_only", request.options.update_only},
                         {"bound",
                          {{"forward", result.chosen.analytic.forward_bound},
                           {"backward", result.chosen.analytic.backward_bound},
                           {"update", result.chosen.analytic.update_bound}}},
                         {"update_bound_s", result.chosen.analytic.update_bound_s},
                         {"ablations", abl},
                         {"candidates", result.candidates},
                         {"space", result.space},
                         {"refined", result.refined},
                         {"feasible", result.feasible},
                         {"simulated", result.simulated}};
  if (result.baseline)
    out.explanation["baseline_tier"] =
        Json{{"name", result.baseline->plan.tiers[0].name},
             {"kind", to_string(result.baseline->plan.tiers[0].kind)},
             {"chosen_by", request.baseline_tier.empty()
                               ? "default: node-local NVMe, else the fastest streamed tier"
                               : "--baseline-tier"}};
  if (result.baseline && out.prediction->iteration_s > 0)
    out.explanation["predicted_speedup"] =
        result.baseline->simulated.prediction.iteration_s / out.prediction->iteration_s;
  for (const auto& w : result.chosen.simulated.warnings) result.warnings.push_back(w);
  if (request.options.update_only && !request.profile.gpus.empty()) {
    const double have = static_cast<double>(request.profile.gpus.front().memory_bytes);
    const GpuMemoryNeed need = gpu_memory_need(a, request.param_offload);
    if (need.total() > have)
      result.warnings.push_back("--update-only skips the GPU memory check: training this shape would need " +
                                format_bytes(need.total()) + " per GPU, " +
                                format_bytes(need.total() - have) + " more than the profile's " +
                                format_bytes(have) + "; " +
                                gpu_memory_advice(a, request.param_offload, have));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace mlpo::tune
