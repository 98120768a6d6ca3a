// The short scheduler slice of the I/O threads (executor/io/io_thread_slice.hpp).
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

#include "executor/io/io_thread_slice.hpp"

namespace mlpo::io {
namespace {

struct SchedAttr {
  std::uint32_t size, sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime, sched_deadline, sched_period;
  std::uint32_t sched_util_min, sched_util_max;
};

// The calling thread's slice as the kernel reports it (0: not reported).
std::uint64_t slice_of_this_thread() {
  SchedAttr attr{};
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return 0;
  return attr.sched_runtime;
}

TEST(IoThreadSlice, TheKernelKeepsTheSliceForThatThreadOnly) {
  // On kernels that take it (Linux 6.12+), the thread reports the slice asked for and stays
  // a normal thread at nice 0; other threads keep theirs. Older kernels refuse or ignore it.
  std::uint64_t main_before = slice_of_this_thread();
  bool taken = false;
  std::uint64_t seen = 0;
  std::uint32_t policy = 99;
  std::thread t([&] {
    taken = request_short_slice_for_this_thread();
    seen = slice_of_this_thread();
    SchedAttr attr{};
    if (::syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) == 0) policy = attr.sched_policy;
  });
  t.join();
  if (!taken) GTEST_SKIP() << "this kernel does not take a custom slice for normal threads";
  EXPECT_EQ(policy, 0u);  // SCHED_OTHER
  if (seen != 0) {
    EXPECT_EQ(seen, kIoThreadSliceNs);
  }
  EXPECT_EQ(slice_of_this_thread(), main_before);
}

}  // namespace
}  // namespace mlpo::io
