// The shared flag checks of the CLIs: numeric validators refuse NaN, infinities, junk and
// out-of-range values naming the flag; FlagModes refuses a flag the mode does not read.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/flag_modes.hpp"
#include "cli/flag_values.hpp"
#include "core/error.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::cli {
namespace {

// The error CLI11 reports for `--x <value>` under `validator`, or "" when accepted.
std::string parse_error(const CLI::Validator& validator, const std::string& value) {
  CLI::App app;
  std::string x;
  app.add_option("--x", x)->check(validator);
  std::vector<std::string> args = {value, "--x"};  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(FlagValues, PositiveRealRefusesNanInfinityZeroNegativeAndJunk) {
  for (const std::string bad : {"nan", "NaN", "inf", "-inf", "1e400", "0", "-1", "", "1x", "0x"})
    EXPECT_NE(parse_error(positive_real(), bad).find("--x: must be a finite number > 0"), std::string::npos)
        << bad;
  for (const std::string good : {"1", "1e-3", "2.5", "1e300"})
    EXPECT_EQ(parse_error(positive_real(), good), "") << good;
}

TEST(FlagValues, Fp32RangesAlsoHoldAfterRoundingToFloat) {
  EXPECT_EQ(parse_error(positive_real(), "1e-50"), "");
  EXPECT_NE(parse_error(positive_real(Precision::fp32), "1e-50").find("as a 32-bit float"),
            std::string::npos);
  EXPECT_NE(parse_error(positive_real(Precision::fp32), "1e300").find("as a 32-bit float"),
            std::string::npos);
  EXPECT_EQ(parse_error(fraction_below_one(), "0.999"), "");
  EXPECT_NE(parse_error(fraction_below_one(), "0.9999999999").find("in [0, 1) as a 32-bit float"),
            std::string::npos);
  EXPECT_NE(parse_error(fraction_below_one(), "1").find("in [0, 1)"), std::string::npos);
  EXPECT_EQ(parse_error(fraction_below_one(), "0"), "");
}

TEST(FlagValues, WholeNumbersAreDecimalIntegersInRange) {
  for (const std::string bad :
       {"0", "-1", "65537", "nan", "1.5", "1e3", "010", "0x10", "", "+", "99999999999999999999999"})
    EXPECT_NE(parse_error(whole_in(1, 65536), bad).find("--x: must be a whole number in [1,65536]"),
              std::string::npos)
        << bad;
  for (const std::string good : {"1", "65536", "+7"})
    EXPECT_EQ(parse_error(whole_in(1, 65536), good), "") << good;
  EXPECT_EQ(parse_error(whole_in(-5, 5), "-5"), "");
  EXPECT_EQ(parse_error(whole_in(0, 10), "-0"), "");
  EXPECT_NE(parse_error(whole_in(1, 10), "-0"), "");
}

TEST(FlagValues, UnsignedWholeTakesTheFull64BitsButNoSign) {
  EXPECT_EQ(parse_error(unsigned_whole(), "18446744073709551615"), "");
  EXPECT_NE(parse_error(unsigned_whole(), "18446744073709551616"), "");
  EXPECT_NE(parse_error(unsigned_whole(), "-1").find("--x: must be a whole number >= 0, got '-1'"),
            std::string::npos);
}

TEST(FlagValues, SizesAndCounts) {
  EXPECT_EQ(parse_error(byte_size(), "64K"), "");
  EXPECT_NE(parse_error(byte_size(), "0").find("--x: must be more than 0 bytes"), std::string::npos);
  EXPECT_NE(parse_error(byte_size(), "nan").find("is not a size"), std::string::npos);
  EXPECT_NE(parse_error(byte_size(4096, 4096), "6000B").find("multiple of 4.0 KiB"), std::string::npos);
  // A size without a unit is refused, not read as bytes (--host-memory-budget 400 was 400 bytes).
  EXPECT_NE(parse_error(byte_size(), "400").find("needs a unit: '400' would be 400 bytes"),
            std::string::npos);
  EXPECT_EQ(parse_error(byte_size(), "4096B"), "");
  EXPECT_EQ(parse_error(count_at_least(1), "1.5B"), "");
  EXPECT_NE(parse_error(count_at_least(1), "0").find("--x: must be at least 1"), std::string::npos);
  EXPECT_NE(parse_error(count_at_least(1), "-1").find("is not a count"), std::string::npos);
}

enum : unsigned { kA = 1, kB = 2 };

struct ModeApp {
  CLI::App app{"test", "tool"};
  std::string one, both, extra;
  ModeApp() {
    app.add_option("--one", one);
    app.add_option("--both", both);
    app.add_option("--extra", extra);
  }
  void parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  }
};

TEST(FlagModes, FlagTheModeDoesNotReadIsAnErrorNamingTheMode) {
  ModeApp m;
  const FlagModes modes({{kA, "alpha"}, {kB, "--beta"}},
                        {{"--one", kA}, {"--both", kA | kB}, {"--extra", kA | kB}},
                        {{"--extra", "--both", "extra refines both"}});
  m.parse({"--one", "1", "--both", "2"});
  EXPECT_NO_THROW(modes.check(m.app, kA));
  EXPECT_EQ(mlpo::testing::error_of([&] { modes.check(m.app, kB); }),
            "--one: not used by --beta; only alpha reads it; drop --one");
}

TEST(FlagModes, FlagWithoutTheFlagItNeedsIsAnError) {
  ModeApp m;
  const FlagModes modes({{kA, "alpha"}}, {{"--one", kA}, {"--both", kA}, {"--extra", kA}},
                        {{"--extra", "--both", "extra refines both"}});
  m.parse({"--extra", "3"});
  EXPECT_EQ(mlpo::testing::error_of([&] { modes.check(m.app, kA); }),
            "--extra: needs --both (extra refines both); add --both or drop --extra");
}

TEST(FlagModes, FlagMissingFromTheTableIsAnInternalError) {
  ModeApp m;
  const FlagModes modes({{kA, "alpha"}}, {{"--one", kA}, {"--both", kA}});
  m.parse({});
  EXPECT_THROW(modes.check(m.app, kA), std::logic_error);
}

}  // namespace
}  // namespace mlpo::cli
