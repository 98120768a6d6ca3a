#include "tuner/search.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tuner/candidate_search.hpp"
#include "tuner/internal/simulated_refine.hpp"

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

namespace {

void check_request(const TuneRequest& request) {
  if (request.profile.tiers.empty())
    throw Error("--profile: the profile lists no storage tiers; re-run mlpo-profile with --tier PATH");
  if (request.profile.tiers.size() > 8)
    throw Error("--profile: more than 8 tiers; keep the ones worth using");
  check_param_offload(request.param_offload, request.shape);
}

// SimGrid ranking of the analytic survivors, with the baseline in the same batch: fills
// the chosen plan, the alternatives and the baseline.
void rank_survivors(const Accounting& a, const TuneRequest& request, const CandidateSearchResult& found,
                    const std::function<void(const std::string&)>& progress, TuneResult& result) {
  const std::size_t survivors = found.best.size();
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
  // Local moves judged by SimGrid (tuner/internal/simulated_refine.hpp); the ranking's first becomes
  // an alternative when a move beats it.
  result.chosen = refine_simulated(a, request, ranked.front(), result.simulated, result.simulated_moves);
  if (result.simulated_moves > 0) ranked.insert(ranked.begin(), result.chosen);
  for (std::size_t i = 1; i < ranked.size() && static_cast<int>(i) <= request.top_k; ++i)
    result.alternatives.push_back(ranked[i]);
}

// The plan file carries the prediction, the baseline's, the alternatives and the explanation
// (bounds, ablations, search counts, baseline tier, predicted speedup).
void annotate_plan(const TuneRequest& request, TuneResult& result) {
  Plan& out = result.chosen.plan;
  out.prediction = result.chosen.simulated.prediction;
  if (result.baseline) out.baseline_prediction = result.baseline->simulated.prediction;
  out.alternatives = Json::array();
  for (const auto& alt : result.alternatives) out.alternatives.push_back(summary(alt));
  out.explanation = Json{{"update_only", request.options.update_only},
                         {"bound",
                          {{"forward", result.chosen.analytic.forward_bound},
                           {"backward", result.chosen.analytic.backward_bound},
                           {"update", result.chosen.analytic.update_bound}}},
                         {"update_bound_s", result.chosen.analytic.update_bound_s},
                         {"ablations", to_json(result.ablations)},
                         {"candidates", result.candidates},
                         {"space", result.space},
                         {"refined", result.refined},
                         {"simulated_moves", result.simulated_moves},
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
}

// --update-only skips the GPU memory check: say what training this shape would need.
void warn_gpu_memory(const Accounting& a, const TuneRequest& request, TuneResult& result) {
  if (!request.options.update_only || request.profile.gpus.empty()) return;
  const double have = static_cast<double>(request.profile.gpus.front().memory_bytes);
  const GpuMemoryNeed need = gpu_memory_need(a, request.param_offload);
  if (need.total() > have)
    result.warnings.push_back("--update-only skips the GPU memory check: training this shape would need " +
                              format_bytes(need.total()) + " per GPU, " + format_bytes(need.total() - have) +
                              " more than the profile's " + format_bytes(have) + "; " +
                              gpu_memory_advice(a, request.param_offload, have));
}

}  // namespace

TuneResult tune(const TuneRequest& in) {
  const auto t0 = std::chrono::steady_clock::now();
  TuneRequest request = in;
  request.options.param_offload = in.param_offload;  // the models time its weight copies too
  check_request(request);
  const Accounting a = account(request.model, request.shape);
  TuneResult result;
  const std::function<void(const std::string&)> progress = [&](const std::string& what) {
    if (request.progress) request.progress(what);
  };
  progress("scoring candidate plans (analytic model)");

  // 1. Analytic search (tuner/candidate_search.hpp): the best survivors, without
  // enumerating the space.
  const std::size_t wanted = static_cast<std::size_t>(std::max(1, request.simulate_top));
  CandidateSearchResult found = search_candidates(a, request, wanted);
  result.candidates = found.scored;
  result.candidates_finer = found.scored_finer;
  result.feasible = found.feasible;
  result.space = found.space;
  result.refined = found.refined;
  if (found.best.empty()) report_infeasible(a, request);

  // 2. SimGrid ranking of the survivors, with the baseline in the same batch.
  rank_survivors(a, request, found, progress, result);

  // 3. Ablations: the chosen plan with each principle off (tuner/internal/ablations.hpp), and its
  // timeline if asked.
  const Plan& best = result.chosen.plan;
  if (request.ablations) {
    progress("simulating the chosen plan with each principle switched off");
    result.ablations = simulate_ablations(a, request, best, result.simulated);
  }
  if (request.timeline) {
    sim::SimulationOptions with_timeline = request.options;
    with_timeline.timeline = true;
    // The chosen plan again, for its timeline: not a run of the search, so not counted (the
    // search says the same with and without --timeline).
    result.chosen.simulated = sim::simulate(a, request.profile, best, with_timeline);
  }

  // 4. The plan file carries the prediction, the baseline's and the alternatives.
  annotate_plan(request, result);
  for (const auto& w : result.chosen.simulated.warnings) result.warnings.push_back(w);
  warn_gpu_memory(a, request, result);
  result.fit = fit_report(a, result.chosen.plan, request, result.chosen.simulated.prediction);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace mlpo::tune
