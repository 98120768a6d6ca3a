#pragma once
// AnalyticModel: a closed-form prediction of one iteration under a plan — each phase is the
// largest of its bandwidth-bound terms (compute, PCIe, each tier, CPU Adam) plus a pipeline
// fill. Per-tier bytes come from the Workload's steps, the schedule the SimGrid model runs
// (tiers updated in place move none). Costs microseconds, so the tuner prunes thousands of
// candidates with it, and it cross-checks the SimGrid model (they agree within 10 % on
// I/O-bound plans; see tests). docs/simulator.md gives the equations.

#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/options.hpp"

namespace mlpo::sim {

// One tier's update-phase term, for one node (all its ranks); all zero for a tier updated in
// place.
struct TierTerm {
  std::string name;
  double read_bytes = 0;
  double write_bytes = 0;
  double read_streams = 0;  // concurrent transfers assumed (after the plan's slot limit)
  double write_streams = 0;
  double read_bps = 0;  // aggregate bandwidth at those streams, each direction alone
  double write_bps = 0;
  double seconds = 0;  // reads and writes overlapped at the mixed rates (docs/simulator.md)
  // Transfers of the node that take a slot over from one that just finished (the plan's
  // limit binds), over the slots: each leaves the tier idle for a slot handoff; those after a
  // read may also wait for the Adam the read started (TierRates::slot_handoff_waits_adam).
  double handoffs_per_slot = 0;
  double read_handoffs_per_slot = 0;
};

struct AnalyticBreakdown {
  Prediction prediction;  // model "analytic"
  std::vector<TierTerm> tiers;
  double forward_compute_s = 0;
  double backward_compute_s = 0;
  double forward_exchange_s = 0;   // ZeRO-3 all-gathers not hidden behind forward compute
  double backward_exchange_s = 0;  // all-gathers, reduce-scatters and small collectives not hidden
  // ZeRO-3, per rank and iteration: the time compute waits for collectives in the exchange
  // schedule (gathers not yet done, staging buffers, the drain before the update; the run
  // log's gather_wait_s + gradient_copy_wait_s), and on the CPU backend the collectives'
  // bytes on the compute cores (CollectiveCost::core_seconds; the log's exchange_cpu_s).
  double collective_wait_s = 0;
  double exchange_core_s = 0;
  double grad_d2h_s = 0;        // bf16 gradients to host over PCIe
  double grad_flush_s = 0;      // fp32 gradients to storage (flush-fp32 only; the slowest tier's;
                                // update-only too, where it is no phase's)
  double grad_norm_s = 0;       // the gradient norm's pass after backward (node's ranks at once)
  double adam_s = 0;            // the node's CPU, shared by its ranks; busy time, slowed while tiers stream
  double h2d_s = 0;             // bf16 weights back to the GPU
  double fill_s = 0;            // first read and last write, which nothing overlaps
  double update_bound_s = 0;    // the physical limit: max(bytes / sum of peak bw, Adam)
  std::int64_t cache_hits = 0;  // per rank (resident subgroups are not hits)
  std::string forward_bound;    // the resource that sets each phase's time
  std::string backward_bound;
  std::string update_bound;
  std::vector<std::string> warnings;
};

// Throws mlpo::Error when a streamed plan tier is missing from the profile.
AnalyticBreakdown analyze(const Accounting& accounting, const Profile& profile, const Plan& plan,
                          const SimulationOptions& options);

}  // namespace mlpo::sim
