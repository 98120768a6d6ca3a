#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.hpp"

namespace mlpo {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(1001);
    for (int rep = 0; rep < 3; ++rep)
      pool.parallel_for(hits.size(), 16, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) hits[i]++;
      });
    for (auto& h : hits) ASSERT_EQ(h.load(), 3) << "threads=" << threads;
  }
}

TEST(Bf16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(float_to_bf16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly half-way between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(float_to_bf16(1.00390625f).bits, 0x3f80);
  EXPECT_EQ(float_to_bf16(1.01171875f).bits, 0x3f82);  // 1 + 3*2^-8 rounds up to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

// An exception in any range is rethrown by parallel_for only after every range is done: the
// job must not run on while its caller unwinds, and one thrown on a worker must not
// terminate the process.
TEST(ThreadPool, ExceptionInAnyRangeIsRethrownAfterEveryRangeFinished) {
  ThreadPool pool(3);
  for (std::size_t thrower : {0u, 1u, 2u}) {
    std::atomic<int> finished{0};
    EXPECT_THROW(pool.parallel_for(3 * 64, 64,
                                   [&](std::size_t b, std::size_t) {
                                     if (b / 64 == thrower) throw std::runtime_error("range failed");
                                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                     finished++;
                                   }),
                 std::runtime_error);
    EXPECT_EQ(finished.load(), 2) << "thrower " << thrower;
  }
  std::atomic<int> after{0};
  pool.parallel_for(3 * 64, 64, [&](std::size_t, std::size_t) { after++; });
  EXPECT_EQ(after.load(), 3) << "the pool still works";
}

}  // namespace mlpo
