#include "core/tier_rates.hpp"

#include <algorithm>

namespace mlpo {

namespace {

double peak(const std::vector<CurvePoint>& curve) {
  double best = 0;
  for (const auto& p : curve) best = std::max(best, p.value.median);
  return best * 1e9;
}

}  // namespace

double TierRates::read_bps(double streams) const {
  const double alone = interpolate(read_curve, streams) * 1e9;
  return measured_mixed() ? std::max(alone, interpolate(mixed_read_curve, streams) * 1e9) : alone;
}

double TierRates::write_bps(double streams) const {
  const double alone = interpolate(write_curve, streams) * 1e9;
  return measured_mixed() ? std::max(alone, interpolate(mixed_write_curve, streams) * 1e9) : alone;
}

double TierRates::read_bps_mixed(double streams) const {
  return measured_mixed() ? interpolate(mixed_read_curve, streams) * 1e9 : read_bps(streams);
}

double TierRates::write_bps_mixed(double streams) const {
  return measured_mixed() ? interpolate(mixed_write_curve, streams) * 1e9 : write_bps(streams);
}

double TierRates::shared_bps(double streams) const {
  const double r = read_bps(streams);
  const double w = write_bps(streams);
  return 2.0 * r * w / (r + w);
}

double TierRates::overlapped_seconds(double read_bytes, double write_bytes, double read_streams,
                                     double write_streams, double cap_bps) const {
  auto capped = [cap_bps](double bps) { return cap_bps > 0 ? std::min(bps, cap_bps) : bps; };
  const double read_alone = capped(read_bps(read_streams));
  const double write_alone = capped(write_bps(write_streams));
  if (!measured_mixed()) {
    const double shared = capped(shared_bps(read_streams + write_streams));
    return std::max(
        {read_bytes / read_alone, write_bytes / write_alone, (read_bytes + write_bytes) / shared});
  }
  const double read_mixed = capped(read_bps_mixed(read_streams));
  const double write_mixed = capped(write_bps_mixed(write_streams));
  const double together = std::min(read_bytes / read_mixed, write_bytes / write_mixed);
  return together + (read_bytes - read_mixed * together) / read_alone +
         (write_bytes - write_mixed * together) / write_alone;
}

double TierRates::interleaved_bps(double streams) const {
  return 2.0 / overlapped_seconds(1.0, 1.0, streams, streams);
}

double TierRates::peak_read_bps() const { return std::max(peak(read_curve), peak(mixed_read_curve)); }
double TierRates::peak_write_bps() const { return std::max(peak(write_curve), peak(mixed_write_curve)); }

double TierRates::least_seconds(double read_bytes, double write_bytes) const {
  if (read_bytes <= 0 && write_bytes <= 0) return 0.0;
  // One direction after the other, each at its best stream count.
  double best = (read_bytes > 0 ? read_bytes / peak_read_bps() : 0.0) +
                (write_bytes > 0 ? write_bytes / peak_write_bps() : 0.0);
  // Both at once, n streams of each, at every measured n (the mixed probe's points).
  for (const auto& point : read_curve) {
    const auto n = static_cast<double>(point.streams);
    best = std::min(best, overlapped_seconds(read_bytes, write_bytes, n, n));
  }
  return best;
}

}  // namespace mlpo
