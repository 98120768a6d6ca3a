#include "simulator/internal/simulation_rates.hpp"

#include <string>

namespace mlpo::sim {

namespace {

// The CPU backend's rate on small widths grows with the tokens per call (micro-batch x
// sequence): tiny at micro-batch 4 runs ~1.9x the rate of micro-batch 1 (docs/benchmarks.md,
// "ZeRO-3 collectives"). A profile measured at a shape 2x or more away says so.
void warn_of_another_shape(const ModelComputeFigures& m, const ClusterShape& run, Rates& r) {
  const double measured = static_cast<double>(m.micro_batch * m.seq_len);
  const double predicted = static_cast<double>(run.micro_batch * run.seq_len);
  if (measured <= 0 || (predicted < 2 * measured && measured < 2 * predicted)) return;
  r.warnings.push_back("host.cpu_model was measured at micro-batch " + std::to_string(m.micro_batch) +
                       " x seq " + std::to_string(m.seq_len) + ", this prediction is for micro-batch " +
                       std::to_string(run.micro_batch) + " x seq " + std::to_string(run.seq_len) +
                       ": forward/backward may be far off; profile with mlpo-profile --model " + m.model +
                       " --micro-batch " + std::to_string(run.micro_batch) + " --seq-len " +
                       std::to_string(run.seq_len));
}

}  // namespace

Rates simulation_rates(const Profile& profile, const Plan& plan, const SimulationOptions& options,
                       const Accounting& accounting) {
  Rates r = rates_of(profile, plan, options.remote_backbone_gbps);
  if (!r.compute_on_gpu && profile.host.cpu_model.measured() && !options.update_only)
    warn_of_another_shape(profile.host.cpu_model, accounting.shape, r);
  // One rank's resident weights on the CPU backend take each subgroup's new bf16 weights by
  // a memcpy after its AdamW (executor/train/internal/rank_weights.hpp); ZeRO-3 ranks gather theirs.
  if (!r.compute_on_gpu && !options.param_offload && !options.update_only && accounting.shape.ranks() == 1)
    r.update_weight_copy_bps = profile.host.memcpy_gbps_single.median * 1e9;
  // The CPU backend's HostStreamedWeights copy a part's bf16 weights on the compute thread
  // before it runs. On a GPU the copies overlap compute on a copy stream (not modelled).
  if (options.param_offload && !r.compute_on_gpu) {
    r.compute.weight_copy_bps = profile.host.memcpy_gbps_single.median * 1e9;
    if (r.compute.weight_copy_bps <= 0)
      r.warnings.push_back(
          "--param-offload: the profile has no host.memcpy_gbps_single; the weight copies "
          "before each part are predicted as 0 s");
  }
  return r;
}

}  // namespace mlpo::sim
