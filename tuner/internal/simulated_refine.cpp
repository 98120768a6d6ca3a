#include "tuner/internal/simulated_refine.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "simulator/iteration_model.hpp"

namespace mlpo::tune {

namespace {

constexpr int kRounds = 3;
constexpr double kGain = 1e-3;  // a move is taken when more than 0.1 % faster

std::int64_t subgroups(const Accounting& a, const Plan& p) {
  return (a.params_per_rank + p.subgroup_elements - 1) / p.subgroup_elements;
}

// Whether the plan moves state in a steady iteration: a streamed tier and a cache that does
// not hold every subgroup.
bool streams(const Accounting& a, const Plan& p) {
  return p.host_cache_subgroups < subgroups(a, p) &&
         std::any_of(p.tiers.begin(), p.tiers.end(),
                     [](const PlanTier& t) { return !updated_in_place(t.kind); });
}

// `p` with its fractions re-filled, when it then fits.
bool refit(const Accounting& a, const TuneRequest& r, Plan& p) {
  return fill_fractions(a, r, p) && !check_fits(a, p, r);
}

// `p` with the largest cache that fits beside its other choices (at most every subgroup),
// its fractions re-filled for it or, with `keep_fractions`, kept (the cache then takes host
// memory no tier share uses); false when not even no cache fits.
bool with_largest_cache(const Accounting& a, const TuneRequest& r, Plan& p, bool keep_fractions = false) {
  auto fits = [&](std::int64_t cache) {
    Plan q = p;
    q.host_cache_subgroups = cache;
    return keep_fractions ? !check_fits(a, q, r) : refit(a, r, q);
  };
  std::int64_t lo = 0, hi = subgroups(a, p);
  if (!fits(lo)) return false;
  if (fits(hi)) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
  }
  p.host_cache_subgroups = lo;
  return keep_fractions || refit(a, r, p);
}

// The moves of one round around `cur` (see the header), each fitting and distinct.
std::vector<Plan> moves(const Accounting& a, const TuneRequest& r, const Plan& cur) {
  std::vector<Plan> out;
  std::set<std::string> seen{to_json(cur).dump()};
  auto offer = [&](Plan p) {
    if (seen.insert(to_json(p).dump()).second) out.push_back(std::move(p));
  };
  for (const bool keep : {true, false}) {
    Plan grown = cur;
    if (with_largest_cache(a, r, grown, keep) && grown.host_cache_subgroups > cur.host_cache_subgroups)
      offer(grown);
  }
  const std::pair<std::int64_t, std::int64_t> pipelines[] = {{2, 1}, {3, 1}, {3, 2}, {4, 2}, {4, 3},
                                                             {6, 3}, {6, 4}, {8, 4}, {8, 6}};
  for (const auto& [buffers, prefetch] : pipelines) {
    if (buffers == cur.buffers && prefetch == cur.prefetch_depth) continue;
    Plan p = cur;
    p.buffers = buffers;
    p.prefetch_depth = prefetch;
    if (with_largest_cache(a, r, p)) offer(p);
  }
  for (std::size_t i = 0; i < cur.tiers.size(); ++i) {
    if (updated_in_place(cur.tiers[i].kind)) continue;
    const std::size_t t = r.profile.tier_index(cur.tiers[i].name);
    if (t == r.profile.tiers.size()) continue;
    const std::vector<std::int64_t> values = limit_values(r.profile, t, a.shape);
    const auto at = std::find(values.begin(), values.end(), cur.tiers[i].concurrency_limit);
    if (at == values.end()) continue;
    for (const auto next : {at - 1, at + 1}) {
      if (next < values.begin() || next >= values.end()) continue;
      Plan p = cur;
      p.tiers[i].concurrency_limit = *next;
      if (refit(a, r, p)) offer(p);
    }
  }
  return out;
}

}  // namespace

RankedPlan refine_simulated(const Accounting& a, const TuneRequest& request, RankedPlan best,
                            std::size_t& simulated, std::size_t& moves_taken) {
  if (!streams(a, best.plan)) return best;
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<Plan> trials = moves(a, request, best.plan);
    if (trials.empty()) break;
    const auto sims = sim::simulate_all(a, request.profile, trials, request.options, request.jobs);
    simulated += sims.size();
    std::size_t pick = trials.size();
    double pick_s = score(best.simulated.prediction) * (1 - kGain);
    for (std::size_t i = 0; i < sims.size(); ++i)
      if (score(sims[i].prediction) < pick_s) {
        pick = i;
        pick_s = score(sims[i].prediction);
      }
    if (pick == trials.size()) break;
    ++moves_taken;
    best =
        RankedPlan{trials[pick], sim::analyze(a, request.profile, trials[pick], request.options), sims[pick]};
  }
  return best;
}

}  // namespace mlpo::tune
