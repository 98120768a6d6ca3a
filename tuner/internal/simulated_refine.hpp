#pragma once
// SimulatedRefine: the search's last step — local moves around the plan SimGrid ranked first,
// each judged by SimGrid itself. The analytic search prunes with a model that is optimistic
// where a pipeline stalls (it cannot see prefetch stalls: docs/simulator.md), so the plans it
// passes on can leave host memory idle that a larger cache would use, or hold a pipeline
// depth SimGrid shows is short. Moves, from the current plan (fractions re-filled unless said):
//   - the largest host cache that still fits, the fractions kept (the cache takes memory no
//     tier share uses) and re-filled (RAM-backed tiers give way to it);
//   - every (buffers, prefetch) pair of the finer search's list, each with the largest cache
//     that fits beside it;
//   - each streamed tier's concurrency limit one step down and up (limit_values).
// One batch of SimGrid runs a round (`jobs` children); the best move is taken when it is
// more than 0.1 % faster, for at most 3 rounds. A plan that moves no state in a steady
// iteration (no streamed tier, or a cache of every subgroup) has nothing to move: no run.

#include <cstddef>

#include "tuner/search.hpp"

namespace mlpo::tune {

// `best` or a faster plan found around it; adds the SimGrid runs made to `simulated` and the
// moves taken to `moves`.
RankedPlan refine_simulated(const Accounting& a, const TuneRequest& request, RankedPlan best,
                            std::size_t& simulated, std::size_t& moves);

}  // namespace mlpo::tune
