// The chart helpers: escaped text, round ticks that cover the data, compact labels.
#include "core/svg.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace mlpo::svg {
namespace {

TEST(Svg, EscapesMarkupCharacters) { EXPECT_EQ(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;"); }

TEST(Svg, TicksAreRoundMultiplesCoveringTheRange) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(3.4, 5.9, 5), (std::vector<double>{3, 3.5, 4, 4.5, 5, 5.5, 6}));
  EXPECT_EQ(nice_ticks(1, 3, 10)[5], 2.0);  // 1, 1.2, ..., 2 exactly: multiples, not a running sum
  const auto flat = nice_ticks(7, 7, 5);    // one value: widened around it
  EXPECT_LE(flat.front(), 7);
  EXPECT_GE(flat.back(), 7);
  EXPECT_GE(flat.size(), 2u);
  const auto around_zero = nice_ticks(-0.3, 0.3, 3);  // -0.4, -0.2, 0, 0.2, 0.4
  ASSERT_EQ(around_zero.size(), 5u);
  EXPECT_EQ(around_zero[2], 0.0);
  EXPECT_FALSE(std::signbit(around_zero[2]));
}

TEST(Svg, CompactNumbersUseSiSuffixes) {
  EXPECT_EQ(compact_number(0.0021), "0.0021");
  EXPECT_EQ(compact_number(12), "12");
  EXPECT_EQ(compact_number(4500), "4.5k");
  EXPECT_EQ(compact_number(1.25e6), "1.25M");
  EXPECT_EQ(compact_number(3e9), "3G");
}

}  // namespace
}  // namespace mlpo::svg
