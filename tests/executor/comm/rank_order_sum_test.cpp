#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "executor/comm/rank_order_sum.hpp"

namespace mlpo::comm {
namespace {

std::vector<std::vector<float>> contributions(int count, std::size_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<std::vector<float>> out(static_cast<std::size_t>(count), std::vector<float>(n));
  for (auto& c : out)
    for (float& x : c) x = std::ldexp(mantissa(rng), exponent(rng));
  return out;
}

std::vector<const float*> pointers(const std::vector<std::vector<float>>& parts, std::size_t first,
                                   std::size_t count) {
  std::vector<const float*> p;
  for (std::size_t i = first; i < first + count; ++i) p.push_back(parts[i].data());
  return p;
}

std::vector<float> sum(std::span<const float* const> parts, std::size_t n) {
  std::vector<float> out(n);
  tree_sum(parts, std::span<float>(out));
  return out;
}

TEST(RankOrderSum, IsTheHalvingTreeNotALeftFold) {
  // Left fold: ((1e8 + 1) - 1e8) + 1 = 1 in fp32; the tree (1e8 + 1) + (-1e8 + 1) = 0.
  const float a = 1e8f, b = 1.0f, c = -1e8f, d = 1.0f;
  const float* parts[4] = {&a, &b, &c, &d};
  float out = -1;
  tree_sum(std::span<const float* const>(parts), std::span<float>(&out, 1));
  EXPECT_EQ(out, 0.0f);
}

TEST(RankOrderSum, BlockPartialSumsReduceToTheSameBitsOnAnyPowerOfTwoRanks) {
  // 12 contributions (3 per rank on 4 ranks, 6 on 2): pre-summing each rank's block and then
  // the ranks' partials gives the one-process sum bit for bit.
  const std::size_t n = 3000;  // spans several tiles
  const auto parts = contributions(12, n);
  const auto all = pointers(parts, 0, 12);
  const std::vector<float> one_process = sum(all, n);
  for (std::size_t ranks : {2u, 4u}) {
    const std::size_t per = 12 / ranks;
    std::vector<std::vector<float>> partials;
    for (std::size_t r = 0; r < ranks; ++r) partials.push_back(sum(pointers(parts, r * per, per), n));
    const std::vector<float> reduced = sum(pointers(partials, 0, ranks), n);
    EXPECT_EQ(std::memcmp(reduced.data(), one_process.data(), n * sizeof(float)), 0) << ranks << " ranks";
  }
}

TEST(RankOrderSum, Bf16IsSummedInFp32AndRoundedOnce) {
  // 1 + 2^-8 + 2^-8: rounding after each add in bf16 (8-bit significand) loses both halves
  // ulps (ties to even), fp32 keeps them and the final rounding gives 1 + 2^-7.
  const bf16 one = float_to_bf16(1.0f), tiny = float_to_bf16(std::ldexp(1.0f, -8));
  const bf16* parts[3] = {&one, &tiny, &tiny};
  bf16 out;
  tree_sum(std::span<const bf16* const>(parts), std::span<bf16>(&out, 1));
  EXPECT_EQ(bf16_to_float(out), 1.0f + std::ldexp(1.0f, -7));
}

TEST(RankOrderSum, OutputMayAliasAnInputPart) {
  auto parts = contributions(3, 2500);
  const std::vector<float> want = sum(pointers(parts, 0, 3), 2500);
  const auto p = pointers(parts, 0, 3);
  tree_sum(std::span<const float* const>(p), std::span<float>(parts[1]));
  EXPECT_EQ(std::memcmp(parts[1].data(), want.data(), want.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace mlpo::comm
