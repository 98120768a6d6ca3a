// The --timeline SVG: a standalone, well-formed document with one lane per rank and tier.
#include <gtest/gtest.h>

#include "tuner/timeline_svg.hpp"

namespace mlpo::tune {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TimelineSvg, OneLanePerRankAndTierInAWellFormedDocument) {
  const std::vector<sim::TimelineEvent> events{{"rank 0", "adam", 0.0, 1.0},
                                               {"rank 1", "stall", 0.0, 0.5},
                                               {"tier nvme", "read", 0.0, 0.9},
                                               {"tier nvme", "write", 1.0, 2.0},
                                               {"tier a<b&c", "read", 0.2, 0.4}};
  const std::string svg = timeline_svg(events, "test");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<g class=\"lane\">"), 4u);
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);  // names are escaped
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // Ranks come before tiers.
  EXPECT_LT(svg.find(">rank 1<"), svg.find(">tier nvme<"));
}

TEST(TimelineSvg, BarsCloserThanAPixelMerge) {
  std::vector<sim::TimelineEvent> many;
  for (int i = 0; i < 10000; ++i) many.push_back({"rank 0", "adam", i * 1e-4, i * 1e-4 + 0.99e-4});
  const std::string svg = timeline_svg(many, "merge");
  EXPECT_LT(count(svg, "<title>adam"), 10u);
}

}  // namespace
}  // namespace mlpo::tune
