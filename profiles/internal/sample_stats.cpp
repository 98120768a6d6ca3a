#include "profiles/internal/sample_stats.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::profiles {

Measurement summarize(std::vector<double> samples, std::int64_t size_bytes) {
  MLPO_CHECK(!samples.empty(), "a probe produced no timed repetition");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Measurement m;
  m.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  m.min = samples.front();
  m.max = samples.back();
  m.repetitions = static_cast<std::int64_t>(n);
  m.size_bytes = size_bytes;
  return m;
}

}  // namespace mlpo::profiles
