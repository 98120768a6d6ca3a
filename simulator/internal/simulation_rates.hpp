#pragma once
// The rates both models run a plan at: core's rates_of() for the profile and plan, plus what
// the run's options add to them (here: --param-offload's weight copies on the CPU backend,
// and the resident weights' copy after each subgroup's AdamW),
// and a warning when the CPU backend's figures were measured at another run shape than the
// one predicted (the rate of small widths grows with the tokens per call).

#include "core/accounting.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/rates.hpp"
#include "simulator/options.hpp"

namespace mlpo::sim {

Rates simulation_rates(const Profile& profile, const Plan& plan, const SimulationOptions& options,
                       const Accounting& accounting);

}  // namespace mlpo::sim
