#pragma once
// How every probe turns its timed repetitions into a profile Measurement: the median is the
// figure the simulator uses, min and max show the spread, and `size_bytes` says how much one
// repetition moved (or touched) so a reader can judge whether it ran out of cache.

#include <cstdint>
#include <vector>

#include "core/profile.hpp"

namespace mlpo::profiles {

// Median (mean of the middle two for an even count), min, max and the count of `samples`;
// MLPO_CHECK fails on an empty list (a probe that timed nothing is a bug, not a user error).
Measurement summarize(std::vector<double> samples, std::int64_t size_bytes);

}  // namespace mlpo::profiles
