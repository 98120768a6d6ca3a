#pragma once
// How the executor splits one subgroup's AdamW over a rank's threads, for the models to
// count the threads a subgroup actually keeps busy. The unchecked update splits a subgroup
// into static ranges of kAdamWGrainElements (kernels/cpu/adamw.hpp's adamw_grain); with
// integrity on (the plan's io.crc) a file tier's subgroup is verified, updated and recorded
// chunk by chunk, one chunk of kIntegrityChunkElements per thread at a time
// (executor/offload/internal/in_place_integrity.hpp). A subgroup of c grains keeps at most c threads
// busy: a 16 Ki-element subgroup runs on one.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kAdamWGrainElements = 16 * 1024;
// 16 Ki: a mapped chunk's new p, m, v wait in a per-thread scratch (3 x 64 KiB) until its check
// passed, which then stays in a core's L2; at 64 Ki (768 KiB) it spilled, and adam_bench's
// `adamw-crc mapped` took 0.129 s for 64 Mi elements on 2 threads against 0.113 s now.
inline constexpr std::int64_t kIntegrityChunkElements = 16 * 1024;

// Threads' worth of `threads` that a subgroup of `elements` keeps busy when split by `grain`:
// the pool gives each thread ceil(grains / threads) whole grains, so the subgroup takes as long
// as that many grains on one thread (22 Ki elements in 16 Ki grains on 2 threads: 16 Ki on
// one, 6 Ki on the other, 1.4 threads' worth).
inline double adam_threads_used(double elements, std::int64_t grain, double threads) {
  const double g = static_cast<double>(grain);
  const double grains = std::max(1.0, std::ceil(elements / g));
  const double per_thread = std::ceil(grains / std::max(1.0, threads));
  return std::clamp(elements / (per_thread * g), 1.0, threads);
}

}  // namespace mlpo
