#pragma once
// Shared by the update-only tests: the options of a run on a given plan.

#include <cstdint>

#include "core/plan.hpp"
#include "executor/update_only/update_only_run.hpp"

namespace mlpo::update_only::testing {

// A run on `plan` of `params` parameters for `steps` steps; every other option at its default.
inline UpdateOnlyOptions run_on(const Plan& plan, std::int64_t params, std::int64_t steps) {
  UpdateOnlyOptions o;
  o.plan = plan;
  o.params = params;
  o.steps = steps;
  return o;
}

}  // namespace mlpo::update_only::testing
