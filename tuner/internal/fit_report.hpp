#pragma once
// "Will it fit?" in numbers: for one plan on a profile, the host memory it takes per node, the
// GPU memory per GPU (when the profile has GPUs and the run trains), each tier's share of the
// state against the tier's free space, and the predicted tokens per second. The search, its
// --explain and --simulate print it; the constraints themselves are check_fits'
// (tuner/plan_space.hpp), from the same figures.

#include <optional>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

struct ResourceUse {
  std::string name;
  double need = 0;  // bytes the plan takes
  double have = 0;  // bytes there are (0 with `known` false: not in the profile)
  bool known = true;
};

struct FitReport {
  ResourceUse host;                // per node; with the CPU backend's model when there is no GPU
  bool cpu_backend = false;        // the profile has no GPU: ranks compute on the CPU
  std::optional<ResourceUse> gpu;  // per GPU; none without GPUs or for --update-only
  std::vector<ResourceUse> tiers;  // the plan's tiers: the state (and fp32 gradients) they hold
  double iteration_s = 0;          // predicted
  double tokens_per_iteration = 0;
  double tokens_per_s = 0;  // 0 for --update-only (no tokens)
};

FitReport fit_report(const Accounting& a, const Plan& plan, const TuneRequest& request,
                     const Prediction& prediction);

// Two lines: "uses: host memory ... of ... per node, GPU memory ...; tier ... of ... free" and
// "predicted throughput: N tokens/s (...)" (the second not for --update-only).
std::string format_fit(const FitReport& fit);
Json to_json(const FitReport& fit);

}  // namespace mlpo::tune
