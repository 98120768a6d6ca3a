#pragma once
// IoSetting: how a tier is driven — the bytes per I/O operation (block size) and the
// operations in flight per stream (queue depth). One type for the settings a profile measured
// on a tier, the ones the tuner searches and the one a plan carries, with the defaults that
// mlpo-profile, the plan format and the I/O engine use unless told otherwise, in one place.

#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kDefaultIoBlockSize = std::int64_t{1} << 20;  // 1 MiB
inline constexpr std::int64_t kDefaultIoQueueDepth = 8;

struct IoSetting {
  std::int64_t block_size = kDefaultIoBlockSize;
  std::int64_t queue_depth = kDefaultIoQueueDepth;
  bool operator==(const IoSetting&) const = default;
};

}  // namespace mlpo
