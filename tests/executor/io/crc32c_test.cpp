#include "executor/io/crc32c.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mlpo::io {
namespace {

TEST(Crc32c, MatchesPublishedCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(crc32c_table(check.data(), check.size()), 0xE3069283u);

  // RFC 3720 (iSCSI) B.4 test vectors.
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xFF), ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c_table(ascending.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, HardwareAndTableAgreeOnEveryLengthAndAlignment) {
  if (!crc32c_hardware_available()) GTEST_SKIP() << "CPU has no SSE4.2 crc32 instruction";
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data(5000);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t len : {0, 1, 7, 8, 9, 15, 63, 64, 100, 4096, 4990}) {
      ASSERT_EQ(crc32c_hardware(data.data() + start, len), crc32c_table(data.data() + start, len))
          << "start " << start << " len " << len;
    }
  }
}

TEST(Crc32c, ExtendingEqualsOneShot) {
  const std::string text = "multi-level optimizer state offload";
  const std::uint32_t whole = crc32c(text.data(), text.size());
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(crc32c(text.data() + cut, text.size() - cut, crc32c(text.data(), cut)), whole);
    EXPECT_EQ(crc32c_table(text.data() + cut, text.size() - cut, crc32c_table(text.data(), cut)), whole);
  }
}

TEST(Crc32c, DetectsASingleFlippedBit) {
  std::vector<unsigned char> data(1 << 16, 0x5A);
  const std::uint32_t before = crc32c(data.data(), data.size());
  data[12345] ^= 0x10;
  EXPECT_NE(crc32c(data.data(), data.size()), before);
}

// Buffers of three 32 KiB strides and more take the three-stream path: same bits as the
// table, whatever the length and alignment around the stride boundaries.
TEST(Crc32c, ThreeStreamPathAgreesWithTheTableAroundEveryStrideBoundary) {
  std::mt19937_64 rng(11);
  std::vector<unsigned char> data(3 * 3 * 32 * 1024 + 100);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t start : {0u, 3u, 8u}) {
    for (std::size_t len : {3 * 32 * 1024 - 1, 3 * 32 * 1024, 3 * 32 * 1024 + 1, 3 * 32 * 1024 + 77,
                            2 * 3 * 32 * 1024, 3 * 3 * 32 * 1024 + 50}) {
      ASSERT_EQ(crc32c(data.data() + start, len), crc32c_table(data.data() + start, len))
          << start << " " << len;
      ASSERT_EQ(crc32c(data.data() + start, len, 0x1234u), crc32c_table(data.data() + start, len, 0x1234u));
    }
  }
}

TEST(Crc32c, CombiningPiecesEqualsTheWhole) {
  std::mt19937_64 rng(5);
  std::vector<unsigned char> data(300000);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  const std::uint32_t whole = crc32c(data.data(), data.size());
  for (std::size_t cut : {0u, 1u, 4096u, 100001u, 299999u, 300000u}) {
    const std::uint32_t a = crc32c(data.data(), cut), b = crc32c(data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc32c_combine(a, b, data.size() - cut), whole) << cut;
    EXPECT_EQ(Crc32cCombiner(data.size() - cut).combine(a, b), whole) << cut;
  }
}

TEST(Crc32c, ThreeAtOnceEqualsEachAlone) {
  std::vector<unsigned char> a(70001, 1), b(70001, 2), c(70001, 3);
  a[5] = 9;
  for (std::size_t n : {0u, 7u, 8u, 70001u}) {
    const auto three = crc32c_three(a.data(), b.data(), c.data(), n);
    EXPECT_EQ(three[0], crc32c(a.data(), n));
    EXPECT_EQ(three[1], crc32c(b.data(), n));
    EXPECT_EQ(three[2], crc32c(c.data(), n));
  }
}

}  // namespace
}  // namespace mlpo::io
