#include "kernels/cpu/convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "tests/kernels/simd_variant.hpp"

namespace mlpo {

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Floats that stress rounding: ties (low half exactly 0x8000) with odd and even kept bit, one
// below and above a tie, subnormals, largest finite (rounds to inf), infinities, signalling and
// quiet NaNs of both signs, then random bit patterns.
std::vector<float> tricky_floats(std::size_t random_count) {
  std::vector<std::uint32_t> u = {0x00000000, 0x80000000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,
                                  0x00000001, 0x00008000, 0x00018000, 0x007fffff, 0x80008000, 0x7f7fffff,
                                  0xff7fffff, 0x7f7f8000, 0x7f800000, 0xff800000, 0x7f800001, 0xff800001,
                                  0x7fc00000, 0xffffffff, 0x7fffffff};
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i < random_count; ++i) u.push_back(static_cast<std::uint32_t>(rng()));
  std::vector<float> out;
  for (std::uint32_t x : u) out.push_back(float_of(x));
  return out;
}

class ConvertVariant : public testing::SimdVariantTest {};

TEST_P(ConvertVariant, Bf16ToFp32IsExactForAllBitPatterns) {
  std::vector<bf16> in(65536 + 3);
  for (std::size_t i = 0; i < in.size(); ++i) in[i].bits = static_cast<std::uint16_t>(i);
  std::vector<float> out(in.size() + 1);
  bf16_to_fp32(in.data(), out.data() + 1, in.size(), GetParam());  // unaligned destination, odd length
  for (std::size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(bits_of(out[i + 1]), static_cast<std::uint32_t>(in[i].bits) << 16) << i;
}

TEST_P(ConvertVariant, Fp32ToBf16MatchesScalarRoundToNearestEvenBitForBit) {
  const std::vector<float> in = tricky_floats(1 << 20);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{17}, in.size()}) {
    std::vector<bf16> out(n + 1, bf16{0xdead});
    fp32_to_bf16(in.data(), out.data() + 1, n, GetParam());
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i + 1].bits, float_to_bf16(in[i]).bits)
          << "n=" << n << " i=" << i << " in=0x" << std::hex << bits_of(in[i]);
    EXPECT_EQ(out[0].bits, 0xdead) << "wrote before the range";
  }
}

TEST_P(ConvertVariant, NaNStaysNaNAndInfStaysInf) {
  const std::vector<float> in = {
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), float_of(0x7f800001),
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  std::vector<bf16> out(in.size());
  fp32_to_bf16(in.data(), out.data(), in.size(), GetParam());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(bf16_to_float(out[i]))) << i;
  EXPECT_EQ(bf16_to_float(out[3]), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_float(out[4]), -std::numeric_limits<float>::infinity());
}

INSTANTIATE_TEST_SUITE_P(Isa, ConvertVariant, testing::simd_variants(), testing::simd_variant_name);

TEST(ConvertThreads, PoolSizeDoesNotChangeTheOutput) {
  const std::vector<float> in = tricky_floats(1000003);
  std::vector<bf16> want(in.size());
  fp32_to_bf16(in.data(), want.data(), in.size(), SimdIsa::scalar);
  std::vector<float> back_want(in.size());
  bf16_to_fp32(want.data(), back_want.data(), want.size(), SimdIsa::scalar);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    std::vector<bf16> got(in.size());
    fp32_to_bf16(pool, in.data(), got.data(), in.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0) << threads << " threads";
    std::vector<float> back(in.size());
    bf16_to_fp32(pool, got.data(), back.data(), got.size());
    EXPECT_EQ(std::memcmp(back.data(), back_want.data(), back.size() * 4), 0) << threads << " threads";
  }
}

}  // namespace
}  // namespace mlpo
