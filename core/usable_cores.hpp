#pragma once
// usable_cores: the CPUs this process may run on — its affinity mask (taskset, a cgroup cpuset
// such as Slurm's or the testbed's per-node CPUs), not the machine's count. Thread pools, the
// profile's `host.cores` and the AdamW model all size themselves by it, so a job confined to 8
// of 64 cores starts 8 threads and predicts for 8.

namespace mlpo {

// At least 1; the machine's count (std::thread::hardware_concurrency) where the mask is unreadable.
unsigned usable_cores();

}  // namespace mlpo
