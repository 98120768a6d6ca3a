#pragma once
// TierRates: one storage tier's measured bandwidth as a function of concurrent streams, alone
// and with the other direction in flight too (the profile's curves), and the pure formulas on
// it that the simulator, the tuner and the executor's bound all use: how long a tier needs for
// a given number of read and written bytes (core/rates.hpp builds them from a profile's
// tier, tier_rates_of). Bandwidths are bytes/s (the profile stores decimal GB/s).

#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/tier_kind.hpp"

namespace mlpo {

struct TierRates {
  std::string name;
  TierKind kind = TierKind::other;
  bool remote = false;                        // reached over the network: per-node link + shared backbone
  std::vector<CurvePoint> read_curve;         // reads alone
  std::vector<CurvePoint> write_curve;        // writes alone
  std::vector<CurvePoint> mixed_read_curve;   // reads while writes are in flight (may be empty)
  std::vector<CurvePoint> mixed_write_curve;  // writes while reads are in flight (may be empty)
  // How this tier and the node's CPU AdamW slow each other down while both run (the
  // profile's update_interference; 1 when not measured, or where the plan streams nothing):
  // the tier's bytes/s while AdamW runs are its curves x io_ratio_adam_busy, AdamW's
  // elements/s while this tier moves bytes are its curve x adam_ratio_io_busy. The models
  // apply them only while both are busy (docs/simulator.md).
  double io_ratio_adam_busy = 1;
  double adam_ratio_io_busy = 1;
  // When a transfer waited for a slot and takes it over from the one that just finished, the
  // tier idles slot_handoff_s, plus slot_handoff_waits_adam of the subgroup AdamW the node
  // started meanwhile (TierProfile::slot_handoff_*; 0 when not measured).
  double slot_handoff_s = 0;
  double slot_handoff_waits_adam = 0;

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
  // The least time any schedule of this tier needs for these bytes, at any measured stream
  // count: the better of overlapping both directions (overlapped_seconds) and running them
  // one after the other at the alone rates. The executor's physical bound of a tier.
  double least_seconds(double read_bytes, double write_bytes) const;
};

}  // namespace mlpo
