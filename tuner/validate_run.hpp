#pragma once
// ValidateRun: holds a measured run log (`mlpo-run`'s JSON lines, read by core/run_log_reader:
// a step logged twice keeps its last record, unknown fields are ignored) against the
// simulator's prediction for the same plan and profile — per phase and per tier, predicted
// versus measured with the relative error. The first logged step is a warm-up and is
// skipped; the rest are averaged.

#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/iteration_model.hpp"

namespace mlpo::tune {

// A file tier's traffic per step, averaged over the steps used (the log's StepTierRecords).
struct MeasuredTier {
  std::string name;
  double read_bytes = 0, write_bytes = 0;  // all ranks' bytes
  double busy_s = 0, slot_wait_s = 0;
};

struct MeasuredRun {
  std::size_t steps_logged = 0;  // distinct steps
  std::size_t steps_used = 0;    // averaged (all but the first when there are two or more)
  // Averages over the steps used.
  double forward_s = 0, backward_s = 0, update_s = 0, prefetch_stall_s = 0;
  double cache_hits = 0;
  // bf16 weight bytes the step fetched into the compute device part by part (optional field):
  // > 0 on one rank means the run used --param-offload, which the prediction then models.
  double weight_fetch_bytes = 0;
  // The step's AdamW calls (optional field; none when a step lacks it): against the
  // prediction's, it tells a CPU that ran slower than its profile from a tier that did.
  std::optional<double> adam_s = 0.0;
  // The share of the node's CPU time the hypervisor took, averaged over the steps that log it
  // (optional field; a step shorter than a clock tick has none); none when no step has it.
  std::optional<double> cpu_steal;
  // ZeRO-3 runs (optional fields; none when a step lacks them): the compute's waits for
  // gathered weights and for the gradient drain, and the exchange thread's CPU seconds.
  std::optional<double> gather_wait_s = 0.0;
  std::optional<double> gradient_copy_wait_s = 0.0;
  std::optional<double> exchange_cpu_s = 0.0;
  // mlpo-run --update-only of a flush-fp32 plan (optional field; none when a step lacks it):
  // the slowest rank's fp32 gradient flush, which the update-only prediction leaves out.
  std::optional<double> gradient_flush_s = 0.0;
  std::vector<MeasuredTier> tiers;
};

// The log's steps averaged (core/run_log_reader's steps). Throws mlpo::Error naming the file
// and line on malformed input, and the file for a log without steps.
MeasuredRun read_run_log(const std::string& path);

struct Comparison {
  std::string quantity;  // "update_s", "tier nvme read_bytes", ...
  double predicted = 0;
  double measured = 0;
  double relative_error() const { return measured != 0 ? (predicted - measured) / measured : 0; }
};

struct ValidationReport {
  MeasuredRun measured;
  sim::SimulationResult predicted;
  bool update_only = false;  // the log has no forward/backward time: predicted update alone
  std::vector<Comparison> rows;
  // The hypervisor's share of the CPU time while the profile measured the host (its
  // host.cpu_steal): with the run's (measured.cpu_steal) it tells a machine that ran slower
  // than it was profiled from a wrong model.
  std::optional<double> profile_cpu_steal;
  std::vector<std::string> warnings;  // the prediction's, then the run's against the profile's
};

// A run whose CPU time was stolen more than this share beyond the profile's is warned about.
inline constexpr double kStealWarnShare = 0.03;

// Simulates `plan` on `profile` (update only when the log's forward and backward are 0) and
// compares. `model` must be the plan's model (its parameter count is checked). The run's remote
// tiers shared a backbone of `remote_backbone_gbps` GB/s per direction among its nodes (0: none),
// as `mlpo-tune --remote-backbone-gbps` models it.
ValidationReport validate_run(const std::string& log_path, const Plan& plan, const Profile& profile,
                              const ModelSpec& model, double remote_backbone_gbps = 0);

std::string format_report(const ValidationReport& report);
// The same report for scripts (`--validate --json`): the rows with predicted, measured and
// relative error (null where nothing was measured), the run log's step counts, the CPU steal
// of the run and of the profile (null where unknown) and the warnings.
Json to_json(const ValidationReport& report);

}  // namespace mlpo::tune
