#include "simulator/simulation_rates.hpp"

namespace mlpo::sim {

Rates simulation_rates(const Profile& profile, const Plan& plan, const SimulationOptions& options) {
  Rates r = rates_of(profile, plan, options.remote_backbone_gbps);
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
