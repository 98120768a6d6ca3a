#pragma once
// How the executor splits one subgroup's AdamW over a rank's threads, for the models to
// count the threads a subgroup actually keeps busy. The unchecked update splits a subgroup
// into static ranges of kAdamWGrainElements (kernels/cpu/adamw.hpp's adamw_grain); with
// integrity on (the plan's io.crc) a file tier's subgroup is verified, updated and recorded
// chunk by chunk, one chunk of kIntegrityChunkElements per thread at a time
// (executor/offload/in_place_integrity.hpp). A subgroup of c grains keeps min(threads, c)
// threads busy: a 64 Ki-element subgroup with CRC on runs on one.

#include <algorithm>
#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kAdamWGrainElements = 16 * 1024;
inline constexpr std::int64_t kIntegrityChunkElements = 64 * 1024;

// Threads of `threads` that a subgroup of `elements` keeps busy when split by `grain`.
inline double adam_threads_used(double elements, std::int64_t grain, double threads) {
  const double grains =
      std::max(1.0, static_cast<double>((static_cast<std::int64_t>(elements) + grain - 1) / grain));
  return std::min(threads, grains);
}

}  // namespace mlpo
