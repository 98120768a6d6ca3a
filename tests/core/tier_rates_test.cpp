// TierRates::least_seconds: the physical bound of one tier that mlpo-run --update-only reports.
#include "core/tier_rates.hpp"

#include <gtest/gtest.h>

namespace mlpo {
namespace {

std::vector<CurvePoint> curve(std::vector<std::pair<std::int64_t, double>> points) {
  std::vector<CurvePoint> out;
  for (auto [streams, gbps] : points) out.push_back(CurvePoint{streams, Measurement{gbps, gbps, gbps, 1, 0}});
  return out;
}

// The dev VM's disk: ~7 GB/s either way alone, ~3.5 + 3.5 GB/s at once.
TierRates disk() {
  TierRates t;
  t.name = "disk";
  t.read_curve = curve({{1, 5.5}, {2, 6.6}, {4, 6.8}});
  t.write_curve = curve({{1, 5.3}, {2, 7.4}, {4, 7.2}});
  t.mixed_read_curve = curve({{1, 2.6}, {2, 3.5}, {4, 3.4}});
  t.mixed_write_curve = curve({{1, 2.6}, {2, 3.4}, {4, 3.5}});
  return t;
}

TEST(TierRates, LeastSecondsOfOneDirectionIsBytesOverTheBestAloneRate) {
  const TierRates t = disk();
  EXPECT_NEAR(t.least_seconds(6.8e9, 0), 1.0, 1e-9);
  EXPECT_NEAR(t.least_seconds(0, 7.4e9), 1.0, 1e-9);
  EXPECT_EQ(t.least_seconds(0, 0), 0.0);
}

TEST(TierRates, LeastSecondsTakesTheFasterOfOverlappedAndOneAfterTheOther) {
  TierRates t = disk();
  const double r = 7e9, w = 7e9;
  // This disk's total is the same either way, a little more one after the other: 7/6.8 + 7/7.4 s
  // against at least 7/3.5 s overlapped.
  EXPECT_NEAR(t.least_seconds(r, w), r / 6.8e9 + w / 7.4e9, 1e-9);
  // A device that overlaps well: 5 + 5 GB/s at once at 2 streams (reads and writes both done
  // after 1.4 s), against 7/6.8 + 7/7.4 s one after the other.
  t.mixed_read_curve = curve({{1, 2.6}, {2, 5.0}, {4, 3.4}});
  t.mixed_write_curve = curve({{1, 2.6}, {2, 5.0}, {4, 3.5}});
  EXPECT_NEAR(t.least_seconds(r, w), 1.4, 1e-9);
  EXPECT_LE(t.least_seconds(r, w), t.overlapped_seconds(r, w, 1, 1));
  EXPECT_LE(t.least_seconds(r, w), t.overlapped_seconds(r, w, 4, 4));
}

TEST(TierRates, LeastSecondsOfATierThatOverlapsFreelyIsTheSlowerDirection) {
  TierRates t;
  t.read_curve = curve({{1, 10}});
  t.write_curve = curve({{1, 5}});
  t.mixed_read_curve = curve({{1, 10}});
  t.mixed_write_curve = curve({{1, 5}});
  EXPECT_NEAR(t.least_seconds(10e9, 10e9), 2.0, 1e-9);  // writes: 10 GB at 5 GB/s, reads alongside
}

}  // namespace
}  // namespace mlpo
