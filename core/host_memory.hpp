#pragma once
// Host memory facts from /proc/meminfo: what the profiler records (MemTotal, MemAvailable)
// and what the executor checks a plan's buffers, cache and resident state against before
// allocating them.

#include <cstdint>
#include <optional>
#include <string>

namespace mlpo {

// The value of one /proc/meminfo line in bytes ("MemAvailable" -> its kB x 1024); nullopt
// when the file or the key is missing (not Linux, a sandbox without /proc).
std::optional<std::int64_t> meminfo_bytes(const std::string& key);

// MemAvailable: the kernel's estimate of the memory a process can take without swapping.
std::optional<std::int64_t> host_memory_available();

// This process's peak resident set so far (getrusage's ru_maxrss, bytes): what a run held in
// RAM at most, mapped RAM-backed tier files included.
std::int64_t peak_rss_bytes();

}  // namespace mlpo
