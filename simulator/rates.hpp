#pragma once
// Rates: the profile's figures turned into the rates both models use for one plan — compute
// FLOP/s per rank, PCIe bytes/s per GPU, the node's CPU-Adam throughput as its ranks share
// the cores, and each plan tier's read/write bandwidth (core/tier_rates.hpp). Bandwidths are
// bytes/s (the profile stores decimal GB/s).

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/tier_rates.hpp"

namespace mlpo::sim {

using mlpo::tier_rates_of;
using mlpo::TierRates;

struct Rates {
  std::int64_t ranks_per_node = 1;
  std::int64_t nodes = 1;
  bool compute_on_gpu = false;
  double compute_flops_per_rank = 0;  // 0: the profile has no compute figure (forward/backward not predicted)
  double h2d_bps = 0;                 // per GPU; 0 without GPUs (weights and gradients stay in host memory)
  double d2h_bps = 0;
  std::int64_t cores = 1;
  std::vector<CurvePoint> adam_curve;  // elements/s by threads
  std::vector<TierRates> tiers;        // in plan order; kind is the plan tier's
  double remote_backbone_bps = 0;      // cluster-wide, per direction
  std::vector<std::string> warnings;

  // Threads one rank's Adam uses: the node's cores split evenly over its ranks.
  double adam_threads_per_rank() const;
  // Aggregate Adam elements/s of the node when `ranks` ranks run Adam at once.
  double adam_node_eps(double ranks) const;
};

// Throws mlpo::Error when a streamed plan tier is not in the profile (names the tier and the
// profile's tiers). A tier updated in place (memory, host) moves no bytes, so it needs no
// figures: it may be missing from the profile, and its curves are never used (the tuner
// checks its capacity and the host memory it takes). `remote_backbone_gbps` 0 means no
// cluster-wide limit beyond each node's own link.
Rates rates_of(const Profile& profile, const Plan& plan, double remote_backbone_gbps);

}  // namespace mlpo::sim
