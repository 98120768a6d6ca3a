#pragma once
// Explain: the text `mlpo-tune --explain` prints — the chosen plan, the resource that bounds
// each phase, the tier split against the tiers' bandwidths, what each principle saves
// (the chosen plan simulated with it switched off) and the speedup over the baseline — and
// the shorter summary the search prints without --explain.

#include <string>

#include "core/profile.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

std::string describe_plan(const Plan& plan);  // one paragraph: tiers, sizes, policies
std::string explain(const TuneResult& result, const Profile& profile);
// The chosen plan, its predicted iteration and update time, the baseline's and the speedup,
// and what the search did (candidates, feasible, refined, simulated, time).
std::string search_summary(const TuneResult& result);
// "predicted (SimGrid): iteration = forward + backward + update; prefetch stall" as one line,
// and a second saying forward and backward are not predicted when `update_only`.
std::string predicted_iteration_line(const Prediction& p, bool update_only);
// What the search did, one line, the same in the summary and in --explain: the analytic
// scores (the grid's coordinate search, revisits counted, and the finer search), how many fit,
// the SimGrid runs and the time.
std::string search_counts_line(const TuneResult& result);

}  // namespace mlpo::tune
