#pragma once
// How the executor splits one subgroup's AdamW over a rank's threads, for the models to
// count the threads a subgroup actually keeps busy. The unchecked update splits a subgroup
// into static ranges of kAdamWGrainElements (kernels/cpu/adamw.hpp's adamw_grain); with
// integrity on (the plan's io.crc) a file tier's subgroup is verified, updated and recorded
// chunk by chunk, one chunk of kIntegrityChunkElements per thread at a time
// (executor/offload/internal/in_place_integrity.hpp). A subgroup of c grains keeps at most c threads
// busy: a 64 Ki-element subgroup with CRC on runs on one.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kAdamWGrainElements = 16 * 1024;
inline constexpr std::int64_t kIntegrityChunkElements = 64 * 1024;

// Threads' worth of `threads` that a subgroup of `elements` keeps busy when split by `grain`:
// the pool gives each thread ceil(grains / threads) whole grains, so the subgroup takes as long
// as that many grains on one thread (86 Ki elements in 64 Ki chunks on 2 threads: 64 Ki on
// one, 22 Ki on the other, 1.3 threads' worth).
inline double adam_threads_used(double elements, std::int64_t grain, double threads) {
  const double g = static_cast<double>(grain);
  const double grains = std::max(1.0, std::ceil(elements / g));
  const double per_thread = std::ceil(grains / std::max(1.0, threads));
  return std::clamp(elements / (per_thread * g), 1.0, threads);
}

}  // namespace mlpo
