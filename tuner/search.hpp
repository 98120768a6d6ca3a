#pragma once
// Search: from a model, a cluster shape and a profile to the plan to run. The analytic search
// (tuner/candidate_search.hpp: coordinate descent per tier subset, then a finer local search;
// µs per candidate, never the whole space in memory) yields the best `simulate_top` feasible
// plans; they and the baseline plan are then simulated with SimGrid (child processes, `jobs`
// at a time), the fastest simulated plan wins, and one ablation per principle of the chosen
// plan (tuner/internal/ablations.hpp) is simulated too. Costs: seconds of analytic scoring even at 8
// tiers and 8 ranks per node, plus ~0.1–1 s per SimGrid run.

#include <optional>
#include <string>
#include <vector>

#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/internal/ablations.hpp"
#include "tuner/internal/fit_report.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

struct RankedPlan {
  Plan plan;
  sim::AnalyticBreakdown analytic;
  sim::SimulationResult simulated;
};

struct TuneResult {
  RankedPlan chosen;                     // chosen.plan carries prediction, baseline, alternatives
  std::vector<RankedPlan> alternatives;  // the next best simulated plans, best first
  std::optional<RankedPlan> baseline;
  std::vector<Ablation> ablations;
  std::size_t candidates = 0;        // scored with the analytic model (revisited grid points each time)
  std::size_t candidates_finer = 0;  // of them, scored by the finer search
  std::size_t feasible = 0;          // of them, those that fit every constraint
  double space = 0;                  // the grid's exhaustive size (not enumerated)
  std::size_t refined = 0;           // finer-search plans better than every grid plan
  std::size_t simulated = 0;         // SimGrid runs
  std::size_t simulated_moves = 0;   // moves the SimGrid refinement took (simulated_refine.hpp)
  double seconds = 0;                // wall time of the search
  std::vector<std::string> warnings;
  FitReport fit;  // the chosen plan's memory, GPU memory and tier use, and its tokens/s
};

// The score plans are ranked by: the iteration time (the update time when update_only).
double score(const Prediction& p);

// Throws mlpo::Error when no plan fits (saying which resource is short and by how much) or
// the request is invalid.
TuneResult tune(const TuneRequest& request);

}  // namespace mlpo::tune
