#pragma once
// Ablations: the chosen plan with each of the five principles switched off in turn
// (multi-path tiers, concurrency limit, cache-friendly order, delayed gradients, overlap),
// simulated with SimGrid, so the plan file and --explain can say what each one saves. A
// principle the plan does not use, or whose ablation does not fit the machine, is not
// simulated and says why. Costs one SimGrid run per simulated ablation.

#include <cstddef>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

// The chosen plan with one of the five principles switched off, simulated.
struct Ablation {
  std::string principle;  // "multi-path tiers", "concurrency limit", ...
  std::string change;     // what was changed ("nvme alone", "no limit", ...)
  bool applies = true;    // false: not simulated; `why_not` says why
  double seconds = 0;     // predicted iteration (or update) time without it
  std::string why_not;
};

// The five ablations of `best`, in the order above, those that apply simulated (request.jobs
// child processes at a time; without a timeline). Adds the SimGrid runs to `simulated`.
std::vector<Ablation> simulate_ablations(const Accounting& a, const TuneRequest& request, const Plan& best,
                                         std::size_t& simulated);

// The plan file's "ablations" array: principle and predicted_s, or why it was not simulated.
Json to_json(const std::vector<Ablation>& ablations);

}  // namespace mlpo::tune
