#pragma once
// StepRecord: one line of the run log (mlpo-run --log, JSON lines; docs/formats.md, "Run
// log") — the one definition of a step record's fields, for the two programs that write it
// (training, `executor/train/internal/step_record`; `--update-only`, `executor/update_only`) and the
// two that read it (`mlpo-run report`, `mlpo-tune --validate`, through core/run_log_reader).
//
// to_json() is the log's line: every field below under its own name, in nlohmann's key order
// (sorted) and number format; the fields of both programs are written always, an optional
// one only when it has a value (`loss` is the exception: null when absent, as update-only
// logs it). step_record_from_json() reads a line back, ignoring fields it does not know, so
// to_json(step_record_from_json(j)) == j for every line MLPO writes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"

namespace mlpo {

// A tier's own device counters over the step (`--update-only` on a block device).
struct StepDeviceRecord {
  double busy_s = 0;
  std::int64_t read_bytes = 0, write_bytes = 0;
};

// One file tier's traffic in the step: bytes summed over the ranks, seconds the slowest rank's
// (`slot_wait_s`: the sum over the ranks in update-only logs).
struct StepTierRecord {
  std::string name;
  std::int64_t read_bytes = 0, write_bytes = 0;
  double busy_s = 0, slot_wait_s = 0;
  std::optional<StepDeviceRecord> device;
  bool in_place = false;  // a mapped host tier, updated in place (written only when true)
};

struct StepRecord {
  std::int64_t step = 0;       // 1-based optimizer step
  std::optional<double> loss;  // none (null) in update-only logs
  // Both programs.
  double grad_norm = 0, forward_s = 0, backward_s = 0, update_s = 0, prefetch_stall_s = 0;
  std::int64_t cache_hits = 0, reads = 0, writes = 0, elements = 0;
  std::optional<double> adam_s, cpu_steal;
  std::vector<StepTierRecord> tiers;
  // Training only.
  std::optional<double> lr, clip_scale, tokens, tokens_per_s, step_s;
  std::optional<double> weights_to_device_s, checkpoint_s, gradient_copy_wait_s;
  std::optional<std::int64_t> checkpoint_bytes;                           // steps that wrote a checkpoint
  std::optional<double> exchange_cpu_s, gather_wait_s;                    // ZeRO-3 ranks
  std::optional<std::int64_t> weight_fetch_bytes, weight_demand_fetches;  // --param-offload
  std::optional<double> eval_loss, eval_s;                                // steps that evaluated
  // Update-only.
  std::optional<std::vector<double>> rank_update_s;  // several ranks: each rank's update_s
  std::optional<double> gradient_flush_s;
  // The node's idle share (0..1) of its CPU time over the update (core/cpu_ticks.hpp); the
  // largest over the ranks.
  std::optional<double> update_cpu_idle;
  // With --profile, the physical bound of the step (executor/update_only/update_only_run.hpp).
  std::optional<double> io_bound_s, adam_bound_s, bound_s, ideal_bound_s, achieved_over_bound;
};

Json to_json(const StepRecord& record);

// Reads one run log line. Absent or null fields stay empty (0 for those always written).
// Throws mlpo::Error naming `where` ("path:line") and the field for a field of the wrong type:
// a `step` that is not a non-negative integer, a number field that is not a number, `tiers`
// that is not an array of objects with a string `name`.
StepRecord step_record_from_json(const Json& line, const std::string& where);

}  // namespace mlpo
