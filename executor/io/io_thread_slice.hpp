#pragma once
// A short scheduler time slice for the threads that keep a tier busy: the TierIo I/O thread
// and the update pipeline's reader and writer threads. Each of them wakes many times per
// transfer (a completion, a slot handed over, a buffer returned) and runs for microseconds,
// while AdamW keeps every core busy for milliseconds per subgroup. Under Linux's EEVDF
// scheduler (6.6+) a waking thread with the default slice may wait for the running one's
// slice to end, and the tier idles meanwhile (a slot limit of 1 on two cores shows it:
// docs/benchmarks.md, "The memory wall"). A
// thread that asks for a short slice (sched_setattr's sched_runtime, honoured for normal
// threads since Linux 6.12, no privilege needed) gets an earlier deadline and runs at once.
// Older kernels ignore the request or refuse it; either way nothing else changes.

namespace mlpo::io {

// The slice asked for, nanoseconds: the kernel's lower bound (0.1 ms).
inline constexpr unsigned long long kIoThreadSliceNs = 100'000;

// Asks for kIoThreadSliceNs for the calling thread; true when the kernel took the request.
bool request_short_slice_for_this_thread();

}  // namespace mlpo::io
