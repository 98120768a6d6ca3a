#pragma once
// Rates: the profile's figures turned into the rates both models use for one plan — compute
// FLOP/s per rank, PCIe bytes/s per GPU, the node's CPU-Adam throughput as its ranks share
// the cores, and each plan tier's read/write bandwidth as a function of concurrent streams,
// alone and with the other direction in flight too. Bandwidths are bytes/s (the profile
// stores decimal GB/s).

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/profile.hpp"

namespace mlpo::sim {

struct TierRates {
  std::string name;
  TierKind kind = TierKind::other;
  bool remote = false;             // reached over the network: per-node link + shared backbone
  std::vector<CurvePoint> read_curve;         // reads alone
  std::vector<CurvePoint> write_curve;        // writes alone
  std::vector<CurvePoint> mixed_read_curve;   // reads while writes are in flight (may be empty)
  std::vector<CurvePoint> mixed_write_curve;  // writes while reads are in flight (may be empty)

  // Aggregate bytes/s of `streams` concurrent reads (writes) when the other direction is
  // idle: the alone curve, but never below the mixed one (a direction does not slow down
  // when the other stops; the write probe's fsync, which state writes do not do, can put the
  // alone figure lower).
  double read_bps(double streams) const;
  double write_bps(double streams) const;
  // The profile measured reads and writes at once on this tier.
  bool measured_mixed() const { return !mixed_read_curve.empty(); }
  // Aggregate bytes/s of `streams` concurrent reads (writes) while the other direction also
  // has transfers in flight: the profile's mixed curves; without them, the direction's own
  // curve (the time-sharing model then limits both together, see shared_bps).
  double read_bps_mixed(double streams) const;
  double write_bps_mixed(double streams) const;
  // Without measured mixed curves, reads and writes are modelled as time-sharing one device:
  // together they get the harmonic mean of the two curves at `streams` transfers in all.
  double shared_bps(double streams) const;
  // Seconds to read `read_bytes` and write `write_bytes` with `read_streams` reads and
  // `write_streams` writes in flight at once, no rate above `cap_bps` (0: no cap). Measured
  // mixed curves: both directions at their mixed rates until the one with less to do is
  // done, the rest of the other at its own rate. Otherwise: the time-sharing model.
  double overlapped_seconds(double read_bytes, double write_bytes, double read_streams, double write_streams,
                            double cap_bps = 0) const;
  // Bytes/s of an even read/write mix with `streams` transfers of each direction in flight:
  // what the tier delivers to the update phase (12 B read and 12 B written per element).
  double interleaved_bps(double streams) const;
  double peak_read_bps() const;
  double peak_write_bps() const;
};

struct Rates {
  std::int64_t ranks_per_node = 1;
  std::int64_t nodes = 1;
  bool compute_on_gpu = false;
  double compute_flops_per_rank = 0;  // 0: the profile has no compute figure (forward/backward not predicted)
  double h2d_bps = 0;                 // per GPU; 0 without GPUs (weights and gradients stay in host memory)
  double d2h_bps = 0;
  std::int64_t cores = 1;
  std::vector<CurvePoint> adam_curve;  // elements/s by threads
  std::vector<TierRates> tiers;        // in plan order
  double remote_backbone_bps = 0;      // cluster-wide, per direction
  std::vector<std::string> warnings;

  // Threads one rank's Adam uses: the node's cores split evenly over its ranks.
  double adam_threads_per_rank() const;
  // Aggregate Adam elements/s of the node when `ranks` ranks run Adam at once.
  double adam_node_eps(double ranks) const;
};

// One profile tier's rates (the tuner sizes tier fractions with them).
TierRates tier_rates_of(const TierProfile& tier);

// Throws mlpo::Error when a plan tier is not in the profile (names the tier and the profile's
// tiers). `remote_backbone_gbps` 0 means no cluster-wide limit beyond each node's own link.
Rates rates_of(const Profile& profile, const Plan& plan, double remote_backbone_gbps);

}  // namespace mlpo::sim
