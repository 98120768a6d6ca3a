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

// Every path the dispatcher may take gives the table's bits: each length 0..4096 at each
// alignment 0..63 (random per length), a continued CRC, and large buffers.
TEST(Crc32c, FoldingPathAgreesWithTheTableOnEveryLengthAndAlignment) {
  if (!crc32c_avx512_available()) GTEST_SKIP() << "CPU has no AVX-512 VPCLMULQDQ";
  std::mt19937_64 rng(13);
  std::vector<unsigned char> data((3 << 20) + 128);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t len = 0; len <= 4096; ++len) {
    const std::size_t start = rng() % 64;
    const auto init = static_cast<std::uint32_t>(rng());
    ASSERT_EQ(crc32c_avx512(data.data() + start, len), crc32c_table(data.data() + start, len))
        << "start " << start << " len " << len;
    ASSERT_EQ(crc32c_avx512(data.data() + start, len, init), crc32c_table(data.data() + start, len, init))
        << "start " << start << " len " << len << " crc " << init;
  }
  for (std::size_t len :
       {std::size_t{65536}, std::size_t{65536 + 17}, std::size_t{1} << 20, (std::size_t{3} << 20) + 101}) {
    const std::size_t start = rng() % 16;
    ASSERT_EQ(crc32c_avx512(data.data() + start, len), crc32c_table(data.data() + start, len)) << len;
  }
}

TEST(Crc32c, EveryPathGivesThePublishedCheckValue) {
  const std::string check = "123456789";
  std::string long_check;  // long enough for the folding loop: 40 copies, 360 bytes
  for (int i = 0; i < 40; ++i) long_check += check;
  const std::uint32_t long_want = crc32c_table(long_check.data(), long_check.size());
  if (crc32c_hardware_available()) {
    EXPECT_EQ(crc32c_hardware(check.data(), check.size()), 0xE3069283u);
    EXPECT_EQ(crc32c_hardware(long_check.data(), long_check.size()), long_want);
  }
  if (crc32c_avx512_available()) {
    EXPECT_EQ(crc32c_avx512(check.data(), check.size()), 0xE3069283u);
    EXPECT_EQ(crc32c_avx512(long_check.data(), long_check.size()), long_want);
    std::vector<unsigned char> zeros(4096, 0), ones(4096, 0xFF);  // RFC 3720 style, 4 KiB
    EXPECT_EQ(crc32c_avx512(zeros.data(), zeros.size()), crc32c_table(zeros.data(), zeros.size()));
    EXPECT_EQ(crc32c_avx512(ones.data(), ones.size()), crc32c_table(ones.data(), ones.size()));
  }
  EXPECT_STRNE(crc32c_path_name(crc32c_path()), "?");
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

// ISA-L (crc32c() below kCrc32cIsalBelowBytes): the table's bits on each length 0..4096 at
// a random alignment, continued from a random CRC, and on each side of the switch to the
// project's own paths.
TEST(Crc32c, IsalAgreesWithTheTableOnEveryLengthAndAtTheSwitch) {
  std::mt19937_64 rng(17);
  std::vector<unsigned char> data(kCrc32cIsalBelowBytes + 4096);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t len = 0; len <= 4096; ++len) {
    const std::size_t start = rng() % 64;
    const auto init = static_cast<std::uint32_t>(rng());
    ASSERT_EQ(crc32c_isal(data.data() + start, len), crc32c_table(data.data() + start, len)) << len;
    ASSERT_EQ(crc32c_isal(data.data() + start, len, init), crc32c_table(data.data() + start, len, init))
        << len;
  }
  for (std::size_t len : {kCrc32cIsalBelowBytes - 1, kCrc32cIsalBelowBytes, kCrc32cIsalBelowBytes + 1}) {
    const std::size_t start = rng() % 16;
    ASSERT_EQ(crc32c(data.data() + start, len), crc32c_table(data.data() + start, len)) << len;
    ASSERT_EQ(crc32c_isal(data.data() + start, len), crc32c_table(data.data() + start, len)) << len;
  }
}

// Buffers of three 32 KiB strides and more take the three-stream path: same bits as the
// table, whatever the length and alignment around the stride boundaries.
TEST(Crc32c, ThreeStreamPathAgreesWithTheTableAroundEveryStrideBoundary) {
  if (!crc32c_hardware_available()) GTEST_SKIP() << "CPU has no SSE4.2 crc32 instruction";
  std::mt19937_64 rng(11);
  std::vector<unsigned char> data(3 * 3 * 32 * 1024 + 100);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t start : {0u, 3u, 8u}) {
    for (std::size_t len : {3 * 32 * 1024 - 1, 3 * 32 * 1024, 3 * 32 * 1024 + 1, 3 * 32 * 1024 + 77,
                            2 * 3 * 32 * 1024, 3 * 3 * 32 * 1024 + 50}) {
      ASSERT_EQ(crc32c_hardware(data.data() + start, len), crc32c_table(data.data() + start, len))
          << start << " " << len;
      ASSERT_EQ(crc32c_hardware(data.data() + start, len, 0x1234u),
                crc32c_table(data.data() + start, len, 0x1234u));
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
  c[70000] = 4;
  for (std::size_t n : {0u, 7u, 8u, 1023u, 1024u, 1025u, 70001u}) {
    const auto three = crc32c_three(a.data(), b.data(), c.data(), n);
    EXPECT_EQ(three[0], crc32c(a.data(), n));
    EXPECT_EQ(three[1], crc32c(b.data(), n));
    EXPECT_EQ(three[2], crc32c(c.data(), n));
    EXPECT_EQ(three[0], crc32c_table(a.data(), n));
    EXPECT_EQ(three[2], crc32c_table(c.data(), n));
  }
}

}  // namespace
}  // namespace mlpo::io
