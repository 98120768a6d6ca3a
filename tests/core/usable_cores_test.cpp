// usable_cores follows the affinity mask (taskset, cpusets), not the machine's CPU count.
#include <gtest/gtest.h>

#include <sched.h>

#include <thread>

#include "core/thread_pool.hpp"
#include "core/usable_cores.hpp"

namespace mlpo {
namespace {

// Runs `body` on a thread confined to the first CPU of this process's mask, then returns.
template <class Body>
void on_one_cpu(Body body) {
  std::thread t([&] {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    int first = 0;
    while (!CPU_ISSET(first, &mine)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    body();
  });
  t.join();
}

TEST(UsableCores, CountsTheCpusThisProcessMayRunOn) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  EXPECT_EQ(usable_cores(), static_cast<unsigned>(CPU_COUNT(&mine)));
  EXPECT_LE(usable_cores(), std::max(1u, std::thread::hardware_concurrency()));
}

TEST(UsableCores, AConfinedThreadSeesOneAndSizesItsPoolsByIt) {
  on_one_cpu([] {
    EXPECT_EQ(usable_cores(), 1u);
    ThreadPool pool(0);
    EXPECT_EQ(pool.size(), 1u);
  });
}

}  // namespace
}  // namespace mlpo
