#pragma once
// Sensitivity: `mlpo-tune --sensitivity` — what bounds this run. The tuner's chosen plan is
// held against every measured resource of the machine moved down and up by a fraction
// (default 25 %): each tier's read and write rate, GPU compute (or the CPU backend's) and
// PCIe, host memory bandwidth, CPU AdamW, each measured comm path and host memory size.
// Two answers per move: the plan kept (one SimGrid run of it on the edited profile; "does
// not fit" when it no longer fits) and the machine re-tuned (a whole search, without
// ablations). Resources are ranked by how much the kept plan's prediction moves.
//
// Cost: one tune, 2 SimGrid runs per resource, and up to 2 searches per resource, `jobs` child
// processes at a time. A move down that leaves the kept plan's prediction unchanged is not
// re-tuned: every plan only gets slower or loses room when a resource shrinks, so the best
// stays the one kept.

#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "tuner/internal/scenario_edit.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

// One resource and its edit target ("tier nvme read" -> tier.nvme.read_gbps).
struct Resource {
  std::string name;
  std::string target;
  std::string unit;  // of the target's value: "GB/s", "bytes", ...
};

// The resources of `s` worth moving: every tier's read and write, compute, PCIe (with a GPU),
// host memory bandwidth, AdamW, each measured comm path, host memory size.
std::vector<Resource> sensitivity_resources(const Scenario& s);

// One side of a move: the predicted score (iteration, or update with update_only), or does
// not fit.
struct MovedPrediction {
  bool fits = true;
  double seconds = 0;
  std::string why;    // when it does not fit
  std::string plan;   // re-tuned only: the best plan there, one line ("" = the kept plan)
  bool tuned = true;  // re-tuned only: false when the search was skipped (see above)
};

struct SensitivityRow {
  Resource resource;
  double value = 0;  // the figure now, in the edit target's unit
  MovedPrediction kept_down, kept_up, retuned_down, retuned_up;
  double impact = 0;  // the ranking key: the largest relative change of the kept plan
};

struct SensitivityResult {
  Plan plan;          // the tuner's chosen plan on the machine as profiled
  double base_s = 0;  // its predicted score
  double change = 0.25;
  bool update_only = false;
  Prediction prediction;                      // the chosen plan's SimGrid phases
  std::string forward_bound, backward_bound;  // the analytic model's bound per phase (--explain's)
  std::string bound;                          // ... and the update's
  std::vector<SensitivityRow> rows;           // most impact first
  std::size_t simulations = 0, searches = 0;
  double seconds = 0;
};

// Tunes `request`, then moves every resource by -change and +change (0 < change < 1).
SensitivityResult sensitivity(const TuneRequest& request, double change);

std::string format_sensitivity(const SensitivityResult& r);
Json to_json(const SensitivityResult& r);
// An SVG tornado chart: one bar per resource from the plan's prediction to its prediction
// with the resource down and up (kept plan: filled; re-tuned: a tick).
std::string tornado_svg(const SensitivityResult& r, const std::string& title);

}  // namespace mlpo::tune
