#include "executor/io/pinned_buffer_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tests/support/locked_memory.hpp"

namespace mlpo::io {
namespace {

using mlpo::testing::locked_kib;

TEST(PinnedBufferPool, LeasesAreAlignedRoundedAndDisjoint) {
  PinnedBufferPool pool(1 * MiB);
  PinnedBuffer a = pool.acquire(1);
  PinnedBuffer b = pool.acquire(5000);
  EXPECT_EQ(a.size(), 4096u);
  EXPECT_EQ(b.size(), 8192u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 4096, 0u);
  EXPECT_TRUE(a.data() + a.size() <= b.data() || b.data() + b.size() <= a.data());
  EXPECT_EQ(pool.in_use(), 12288u);
  a.reset();
  EXPECT_EQ(pool.in_use(), 8192u);
}

TEST(PinnedBufferPool, AcquireBlocksInsteadOfExceedingTheBudget) {
  PinnedBufferPool pool(1 * MiB);
  PinnedBuffer all = pool.acquire(1 * MiB);
  EXPECT_FALSE(pool.try_acquire(4096).has_value());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    PinnedBuffer b = pool.acquire(4096);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got.load()) << "acquire must wait while the budget is used up";
  all.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(PinnedBufferPool, LeaseLargerThanTheBudgetIsAnError) {
  PinnedBufferPool pool(64 * KiB);
  EXPECT_THROW(pool.acquire(65 * KiB), Error);
  EXPECT_THROW(pool.acquire(0), Error);
}

TEST(PinnedBufferPool, ReturnedRangesCoalesce) {
  PinnedBufferPool pool(1 * MiB);
  std::vector<PinnedBuffer> quarters;
  for (int i = 0; i < 4; ++i) quarters.push_back(pool.acquire(256 * KiB));
  // Return in an order that needs merging on both sides.
  quarters[1].reset();
  quarters[3].reset();
  quarters[2].reset();
  quarters[0].reset();
  EXPECT_TRUE(pool.try_acquire(1 * MiB).has_value());
}

TEST(PinnedBufferPool, PagesAreLockedWhileThePoolLivesAndUnlockedAfter) {
  const long before = locked_kib();
  ASSERT_GE(before, 0);
  {
    PinnedBufferPool pool(8 * MiB);
    EXPECT_GE(locked_kib() - before, 8 * 1024);
  }
  EXPECT_EQ(locked_kib(), before);
}

TEST(PinnedBufferPool, CustomPinHooksAreCalledOncePerPool) {
  int pins = 0, unpins = 0;
  {
    PinHooks hooks{[&](void*, std::size_t size) { pins += size == 64 * KiB; },
                   [&](void*, std::size_t size) { unpins += size == 64 * KiB; }};
    PinnedBufferPool pool(64 * KiB, hooks);
    EXPECT_EQ(pins, 1);
  }
  EXPECT_EQ(unpins, 1);
}

}  // namespace
}  // namespace mlpo::io
