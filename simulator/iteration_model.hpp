#pragma once
// IterationModel: the SimGrid model of one training iteration under a plan. The schedule is
// the executor's, actor for actor (docs/simulator.md draws it):
//   rank<r>            forward (per layer: compute), backward (per layer: compute, bf16
//                      gradients to host over PCIe, fp32 gradient flush in flush-fp32 mode),
//                      then the update's Adam loop: wait for subgroup i's read (a miss),
//                      CPU AdamW, bf16 weights to the GPU, hand the write-back to the tier's
//                      writers. Resident subgroups (on a tier updated in place: memory, host)
//                      are neither read nor written: their steps are Adam alone.
//   rank<r>.prefetch   walks the update order ahead of Adam: takes a prefetch-window permit
//                      (depth d) and a pinned buffer, queues the read on the subgroup's tier
//   rank<r>.<tier>.read<j> / .write<j>
//                      tier streams: take the node-wide slot of that tier (an S4U semaphore
//                      with the plan's limit k), move the bytes, give the slot back; none on
//                      a tier without transfers (one updated in place has none)
// Disk I/O happens only in tier-stream actors (SimGrid 3.32 slows quadratically when one
// actor mixes disk I/O with other activities).
//
// `simulate` runs each simulation in a forked child process (SimGrid keeps global state that
// a second Engine in one process inherits), so it is safe to call any number of times.

#include <cstdint>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/options.hpp"

namespace mlpo::sim {

// One bar of the timeline: lane "rank 0" or "tier nvme" (node 0 only), kind one of
// forward, backward, adam, stall (waiting for a read), read, write, flush, slot-wait.
struct TimelineEvent {
  std::string lane;
  std::string kind;
  double start = 0;
  double end = 0;
};

struct TierStats {
  std::string name;
  double slot_wait_s = 0;    // node 0, summed over its ranks' streams
  double busy_fraction = 0;  // busy_s / iteration_s
};

struct SimulationResult {
  Prediction prediction;  // model "simgrid"; tier bytes and busy time are node 0's
  std::vector<TierStats> tiers;
  std::int64_t cache_hits = 0;  // per rank
  std::int64_t simulated_nodes = 1;
  double wall_s = 0;  // host seconds the simulation took (child process)
  std::vector<TimelineEvent> timeline;
  std::vector<std::string> warnings;
};

Json to_json(const SimulationResult& r);
SimulationResult simulation_result_from_json(const Json& json);

// Simulates one iteration of `plan` in a child process. Throws mlpo::Error on a plan that
// does not fit the profile (missing tier).
SimulationResult simulate(const Accounting& accounting, const Profile& profile, const Plan& plan,
                          const SimulationOptions& options);

// Simulates several plans, `jobs` child processes at a time; results in `plans` order.
std::vector<SimulationResult> simulate_all(const Accounting& accounting, const Profile& profile,
                                           const std::vector<Plan>& plans, const SimulationOptions& options,
                                           int jobs);

// Simulates one plan on each of several profiles (the same machine with one figure changed:
// mlpo-tune --sensitivity), `jobs` child processes at a time; results in `profiles` order.
std::vector<SimulationResult> simulate_on_each(const Accounting& accounting,
                                               const std::vector<Profile>& profiles, const Plan& plan,
                                               const SimulationOptions& options, int jobs);

}  // namespace mlpo::sim
