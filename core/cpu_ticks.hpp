#pragma once
// cpu_ticks: /proc/stat's CPU ticks, and two shares of them between two reads.
//
// Steal, the CPU time the hypervisor took: on a virtual machine a vCPU that is ready to run waits while
// the host runs something else, and Linux counts that wait as "steal" in /proc/stat. On a
// shared cloud VM it comes and goes within minutes and slows every CPU-bound phase by about
// 1 / (1 - share). mlpo-profile records the share during its host probes, mlpo-run during
// each step, and mlpo-tune --validate prints both, so that a machine that ran slower than it
// was profiled is told apart from a model that is wrong. The same line's idle ticks tell how
// much of the CPU a phase left unused: `mlpo-run --update-only` logs that share over each
// update, which says whether work added to the update (its integrity check) had idle CPU to
// hide in or must lengthen it (scripts/bench-crc.sh).

#include <cstdint>
#include <optional>
#include <string_view>

namespace mlpo {

// Clock ticks of all CPUs together, from /proc/stat's aggregate "cpu" line.
struct CpuTicks {
  std::int64_t total = 0;  // user + nice + system + idle + iowait + irq + softirq + steal
  std::int64_t steal = 0;
  std::int64_t idle = 0;  // idle + iowait: no task wanted the CPU
};

// The aggregate "cpu " line of /proc/stat's text; nullopt when it is absent or malformed.
std::optional<CpuTicks> parse_cpu_ticks(std::string_view proc_stat);

// /proc/stat now; nullopt where it cannot be read (not Linux, a sandbox without /proc).
std::optional<CpuTicks> read_cpu_ticks();

// The share (0..1) of the CPU time from `before` to `after` that was stolen; nullopt when
// either is unknown or no tick passed between them.
std::optional<double> steal_share(const std::optional<CpuTicks>& before,
                                  const std::optional<CpuTicks>& after);

// The share (0..1) of the CPU time from `before` to `after` that was idle (idle + iowait);
// nullopt as steal_share.
std::optional<double> idle_share(const std::optional<CpuTicks>& before, const std::optional<CpuTicks>& after);

}  // namespace mlpo
