#pragma once
// Search: from a model, a cluster shape and a profile to the plan to run. Every candidate of
// the plan space that fits memory and capacity is scored with the analytic model (µs each);
// the best `simulate_top` survivors, the baseline plan and one ablation per principle of the
// chosen plan are then simulated with SimGrid (child processes, `jobs` at a time), and the
// fastest simulated plan wins. Costs: about one second of analytic scoring for tens of
// thousands of candidates, plus ~0.1–1 s per SimGrid run.

#include <optional>
#include <string>
#include <vector>

#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

struct RankedPlan {
  Plan plan;
  sim::AnalyticBreakdown analytic;
  sim::SimulationResult simulated;
};

// The chosen plan with one of the five principles switched off, simulated.
struct Ablation {
  std::string principle;  // "multi-path tiers", "concurrency limit", ...
  std::string change;     // what was changed ("nvme alone", "no limit", ...)
  bool applies = true;    // false: not simulated; `why_not` says why
  double seconds = 0;     // predicted iteration (or update) time without it
  std::string why_not;
};

struct TuneResult {
  RankedPlan chosen;                  // chosen.plan carries prediction, baseline, alternatives
  std::vector<RankedPlan> alternatives;   // the next best simulated plans, best first
  std::optional<RankedPlan> baseline;
  std::vector<Ablation> ablations;
  std::size_t candidates = 0;         // generated
  std::size_t feasible = 0;           // that fit every constraint
  std::size_t simulated = 0;          // SimGrid runs
  double seconds = 0;                 // wall time of the search
  std::vector<std::string> warnings;
};

// The score plans are ranked by: the iteration time (the update time when update_only).
double score(const Prediction& p);

// Throws mlpo::Error when no plan fits (saying which resource is short and by how much) or
// the request is invalid.
TuneResult tune(const TuneRequest& request);

}  // namespace mlpo::tune
