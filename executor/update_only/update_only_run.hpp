#pragma once
// UpdateOnlyRun: the real update phase with no model — `mlpo-run --update-only`. Synthetic
// bf16 gradients (a pure function of seed, step and global element index) stand in for
// backward; everything else is the production path: the plan's tiers with real files and
// io_uring, node-wide slots, the pipeline, the cache and order, fused AdamW, the global
// gradient norm and clipping. With ranks > 1 each rank is a forked process owning 1/R of
// the state (ZeRO-3) and sharing the tiers, so the concurrency limits act across processes.
//
// Per step it records update seconds, bytes and busy/slot-wait seconds per tier, prefetch
// stalls, cache hits and — given a profile — the physical bound of the iteration:
//   bound       = max( max_t max(read_t / R_t, write_t / W_t) , elements / adam_elements_per_s )
//   ideal_bound = max( sum_t bytes_t / sum_t bw_t ,            elements / adam_elements_per_s )
// with R_t, W_t the tier's best measured read/write bandwidth and bw_t its effective
// bandwidth for its read/write mix. `bound` is the limit for the plan's placement (the
// slowest tier); `ideal_bound` the limit for any placement (the formula above). Tier files
// live in <tier path>/mlpo/<run>/ and are removed at the end (also after an error).
//
// This program has its own folder (executor/update_only, library mlpo_update_only) beside the
// engine it drives (executor/offload), so the engine stays the engine alone.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "kernels/cpu/adamw.hpp"

namespace mlpo::comm {
class Communicator;
}

namespace mlpo::update_only {

struct UpdateOnlyOptions {
  Plan plan;
  std::optional<Profile> profile;  // for the physical bound; none: bound not reported
  std::int64_t params = 0;         // total over all ranks
  int ranks = 1;
  std::int64_t steps = 10;
  std::uint64_t seed = 1;
  AdamWParams adam{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  double max_grad_norm = 1.0;  // clipping threshold; <= 0 disables
  unsigned threads = 0;        // AdamW threads per rank; 0 = cores / ranks
  bool state_hash = false;
  std::string run_name;  // default: update-<host>-<pid> (TierRunDirectories)
  // Ranks a launcher started (mpirun, srun): with a world of several, this process is one
  // rank of it (--ranks left out or equal to the world's size) and only rank 0 gets the log
  // records and the summary. Null or a world of one: `ranks` are forked here.
  comm::Communicator* comm = nullptr;
};

struct UpdateOnlyResult {
  std::vector<Json> steps;  // one log record per step (a core/step_record StepRecord as JSON)
  Json summary;
  std::string state_sha256;  // when state_hash
};

// Runs it. `on_step` (may be empty) sees each step's record as soon as it is complete (launched
// ranks: on rank 0 only; the others return an empty result).
// Throws mlpo::Error on invalid options (AdamW values that are not finite or out of range,
// named by their flags; a tier missing from the profile), a tier
// error, or a rank that failed (naming the rank).
UpdateOnlyResult run_update_only(const UpdateOnlyOptions& options,
                                 const std::function<void(const Json&)>& on_step);

}  // namespace mlpo::update_only
