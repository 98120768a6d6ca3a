// The micro-batch tree sum: bitwise the halving tree of comm::tree_sum for any number of
// micro-batches, so that blocks of micro-batches summed per rank and then over a power of two
// of ranks give one process's bits.
#include "executor/compute/micro_batch_gradient_sum.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "executor/comm/rank_order_sum.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace mlpo::compute {
namespace {

constexpr std::int64_t kElements = 1000;

// Values with a wide exponent spread, so that the order of additions shows in the bits.
std::vector<float> leaf_values(int leaf) {
  std::vector<float> v(kElements);
  std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(leaf + 1);
  for (auto& f : v) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    f = static_cast<float>((static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5) *
                           std::ldexp(1.0, static_cast<int>(x % 30) - 15));
  }
  return v;
}

struct Rig {
  Rig()
      : pool(2),
        backend(pool, CpuBackendOptions{1, cpu::GemmPath::blas}),
        leaf_buffer(backend.allocate(DType::f32, kElements)) {}
  Tensor leaf() const { return leaf_buffer.view(DType::f32, {kElements}); }
  ThreadPool pool;
  CpuBackend backend;
  DeviceBuffer leaf_buffer;
};

// Sums leaves first .. first+n-1 through MicroBatchGradientSum, handing each over in two ranges
// as backward does.
std::vector<float> incremental_sum(Rig& rig, int first, int n, int* extra_buffers = nullptr) {
  MicroBatchGradientSum sum(rig.backend, rig.leaf(), n);
  if (extra_buffers) *extra_buffers = sum.extra_buffers();
  std::vector<float> out(kElements);
  for (int i = 0; i < n; ++i) {
    const std::vector<float> v = leaf_values(first + i);
    std::memcpy(rig.leaf().data, v.data(), v.size() * sizeof(float));
    for (model::ParameterRange r : {model::ParameterRange{600, 400}, model::ParameterRange{0, 600}}) {
      const Tensor t = sum.add(i, r);
      EXPECT_EQ(t.data != nullptr, i == n - 1) << "a sum is only returned for the last micro-batch";
      if (t.data)
        std::memcpy(out.data() + r.offset, t.data, static_cast<std::size_t>(r.count) * sizeof(float));
    }
  }
  return out;
}

std::vector<float> tree(const std::vector<std::vector<float>>& parts) {
  std::vector<const float*> ptrs;
  for (const auto& p : parts) ptrs.push_back(p.data());
  std::vector<float> out(kElements);
  comm::tree_sum(std::span<const float* const>(ptrs), std::span<float>(out));
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(MicroBatchGradientSum, EqualsTheHalvingTreeForAnyCount) {
  Rig rig;
  for (int n = 1; n <= 13; ++n) {
    std::vector<std::vector<float>> leaves;
    for (int i = 0; i < n; ++i) leaves.push_back(leaf_values(i));
    int buffers = -1;
    EXPECT_TRUE(same_bits(incremental_sum(rig, 0, n, &buffers), tree(leaves))) << n << " micro-batches";
    EXPECT_EQ(buffers, static_cast<int>(std::floor(std::log2(n)))) << n << " micro-batches";
  }
}

// What makes 1, 2 and 4 ranks agree: each rank sums its block of a micro-batches, the ranks'
// sums are tree-summed over ranks, and that equals one process summing all of them.
TEST(MicroBatchGradientSum, PowerOfTwoBlocksReduceToTheSameBitsAsOneProcess) {
  Rig rig;
  for (int per_rank : {1, 2, 3, 5}) {
    for (int ranks : {2, 4}) {
      const std::vector<float> one_process = incremental_sum(rig, 0, ranks * per_rank);
      std::vector<std::vector<float>> rank_sums;
      for (int r = 0; r < ranks; ++r) rank_sums.push_back(incremental_sum(rig, r * per_rank, per_rank));
      EXPECT_TRUE(same_bits(tree(rank_sums), one_process)) << ranks << " ranks x " << per_rank;
    }
  }
  // A plain left-to-right sum is another order: the data are chosen so that it shows.
  std::vector<float> left(kElements, 0.0f);
  for (int i = 0; i < 4; ++i) {
    const auto v = leaf_values(i);
    for (std::int64_t e = 0; e < kElements; ++e)
      left[static_cast<std::size_t>(e)] += v[static_cast<std::size_t>(e)];
  }
  EXPECT_FALSE(same_bits(left, incremental_sum(rig, 0, 4)));
}

}  // namespace
}  // namespace mlpo::compute
