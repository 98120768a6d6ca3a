#pragma once
// What to simulate, shared by the analytic and the SimGrid model.

namespace mlpo::sim {

struct SimulationOptions {
  bool update_only = false;         // predict the update phase alone (`mlpo-run --update-only`)
  bool timeline = false;            // record a timeline (SimGrid model only)
  bool full_cluster = false;        // simulate every node; default: one node with its share of shared links
  double remote_backbone_gbps = 0;  // cluster-wide limit of remote tiers, GB/s per direction; 0: none
  // One rank's bf16 weights in host memory, copied to the compute device one part at a time
  // in each pass (`mlpo-run --param-offload`): on the CPU backend a memcpy before the part's
  // compute, at the profile's one-thread memcpy rate (simulation_rates.hpp).
  bool param_offload = false;
};

}  // namespace mlpo::sim
