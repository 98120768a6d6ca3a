// The summary and --compare views show every measured figure; compare gives new/old.
#include "profiles/summary_table.hpp"

#include <gtest/gtest.h>

#include <string_view>

namespace mlpo::profiles {
namespace {

Measurement m(double v) { return {v, v * 0.9, v * 1.1, 3, 1024}; }

Profile sample(double scale) {
  Profile p;
  p.hostname = std::string("h");
  p.host.memory_bytes = 1 << 30;
  p.host.memcpy_gbps_single = m(5 * scale);
  p.host.memcpy_gbps = m(10 * scale);
  p.host.adam_elements_per_s = {{1, m(1e9 * scale)}, {2, m(1.8e9 * scale)}};
  TierProfile t;
  t.name = std::string("disk");
  t.path = std::string("/var/tmp");
  t.read_gbps = {{1, m(2 * scale)}, {2, m(3 * scale)}};
  t.write_gbps = {{1, m(1 * scale)}, {2, m(1.5 * scale)}};
  p.tiers = {t};
  p.gpus_reason = std::string("no device");
  return p;
}

TEST(SummaryTable, ListsEveryTierPointAndTheGpuReason) {
  const std::string s = summary_table(sample(1));
  EXPECT_NE(s.find("tier 'disk'"), std::string::npos) << s;
  EXPECT_NE(s.find("3.000"), std::string::npos) << s;  // read at 2 streams
  EXPECT_NE(s.find("gpus: none (no device)"), std::string::npos) << s;
}

TEST(CompareTable, RatioIsNewOverOld) {
  const std::string s = compare_table(sample(1), sample(2));
  const std::size_t line = s.find("tiers[disk].read_gbps@2");
  ASSERT_NE(line, std::string::npos) << s;
  const std::string_view row = std::string_view(s).substr(line, s.find('\n', line) - line);
  EXPECT_NE(row.find("2.000"), std::string_view::npos) << s;
}

TEST(CompareTable, FiguresInOnlyOneProfileAreShownWithADash) {
  Profile newer = sample(1);
  newer.tiers[0].name = std::string(4, 'n');  // "nnnn": a tier the old profile lacks
  const std::string s = compare_table(sample(1), newer);
  EXPECT_NE(s.find("tiers[nnnn].read_gbps@1"), std::string::npos) << s;
  EXPECT_NE(s.find("tiers[disk].read_gbps@1"), std::string::npos) << s;
}

}  // namespace
}  // namespace mlpo::profiles
