#pragma once
// What to simulate, shared by the analytic and the SimGrid model.

namespace mlpo::sim {

struct SimulationOptions {
  bool update_only = false;         // predict the update phase alone (`mlpo-run --update-only`)
  bool timeline = false;            // record a timeline (SimGrid model only)
  bool full_cluster = false;        // simulate every node; default: one node with its share of shared links
  double remote_backbone_gbps = 0;  // cluster-wide limit of remote tiers, GB/s per direction; 0: none
};

}  // namespace mlpo::sim
