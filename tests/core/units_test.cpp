#include "core/units.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace mlpo {

TEST(ParseBytes, BinaryAndDecimalSuffixes) {
  EXPECT_EQ(parse_bytes("4096", "x"), 4096u);
  EXPECT_EQ(parse_bytes("4K", "x"), 4096u);
  EXPECT_EQ(parse_bytes("2GiB", "x"), 2 * GiB);
  EXPECT_EQ(parse_bytes("1.5g", "x"), 3 * GiB / 2);
  EXPECT_EQ(parse_bytes("3GB", "x"), 3000000000u);
}

TEST(ParseBytes, RejectsGarbageNamingTheOption) {
  try {
    parse_bytes("lots", "--host-memory-budget");
    FAIL() << "expected mlpo::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--host-memory-budget"), std::string::npos);
  }
  EXPECT_THROW(parse_bytes("12XB", "x"), Error);
}

TEST(FormatBytes, PicksReadableUnit) {
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(512 * 1024.0), "512.0 KiB");
}

}  // namespace mlpo

namespace mlpo {

TEST(ParseCount, AcceptsPlainScientificAndSuffixed) {
  EXPECT_EQ(parse_count("1000000", "x"), 1000000u);
  EXPECT_EQ(parse_count("1e9", "x"), 1000000000u);
  EXPECT_EQ(parse_count("1.5B", "x"), 1500000000u);
  EXPECT_EQ(parse_count("500M", "x"), 500000000u);
  EXPECT_THROW(parse_count("many", "x"), Error);
  EXPECT_THROW(parse_count("-5", "x"), Error);
  EXPECT_THROW(parse_count("12Q", "x"), Error);
}

}  // namespace mlpo
