#include "executor/io/io_thread_slice.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace mlpo::io {

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h), declared here because
// glibc's headers do not export it and <linux/sched/types.h> clashes with <sched.h>.
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};

}  // namespace

bool request_short_slice_for_this_thread() {
#ifdef SYS_sched_setattr
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.sched_policy = 0;  // SCHED_OTHER, nice 0: only the slice changes
  attr.sched_runtime = kIoThreadSliceNs;
  return ::syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
#else
  return false;
#endif
}

}  // namespace mlpo::io
