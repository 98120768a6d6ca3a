#pragma once
// SimulatePlan: the prediction for exactly one given plan (`mlpo-tune --simulate`) — the
// SimGrid model's per-phase and per-tier breakdown, the analytic model's bound resource per
// phase and the update's physical limit, and whether the plan fits the profile's host memory,
// tier capacity and GPU memory (a plan that does not fit is still simulated; the shortfall is
// reported beside it). Any subgroup size, cache size, buffer count, limit or slot scope the
// plan format accepts can be simulated: the search's grid is no restriction here.

#include <optional>
#include <string>

#include "core/json_io.hpp"
#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/internal/fit_report.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

struct PlanSimulation {
  Plan plan;  // as simulated (its cluster may come from shape flags)
  sim::AnalyticBreakdown analytic;
  sim::SimulationResult simulated;
  std::optional<Shortfall> shortfall;  // what the plan lacks on this profile, if anything
  FitReport fit;                       // what it uses of each, and its tokens/s
  bool update_only = false;
};

// Simulates `plan` on `profile`. `model` must be the plan's model (its parameter count is
// checked, mlpo::Error otherwise). `host_memory_budget` 0: the profile's available bytes;
// `param_offload`: GPU memory as `mlpo-run --param-offload` holds the weights (one rank).
PlanSimulation simulate_plan(const Plan& plan, const ModelSpec& model, const Profile& profile,
                             const sim::SimulationOptions& options, std::int64_t host_memory_budget = 0,
                             bool param_offload = false);

std::string format_simulation(const PlanSimulation& s);
Json to_json(const PlanSimulation& s);

}  // namespace mlpo::tune
