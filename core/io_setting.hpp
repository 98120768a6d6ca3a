#pragma once
// IoSetting: how a tier is driven — the bytes per I/O operation (block size) and the
// operations in flight per stream (queue depth). One type for the settings a profile measured
// on a tier, the ones the tuner searches and the one a plan carries, with the defaults that
// mlpo-profile, the plan format and the I/O engine use unless told otherwise, in one place.

#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kDefaultIoBlockSize = std::int64_t{1} << 20;  // 1 MiB
inline constexpr std::int64_t kDefaultIoQueueDepth = 8;

// The valid range, for the profile's and the plan's rows and the profiler's --io-settings: a
// block size is a whole number of 4 KiB pages up to 1 GiB (O_DIRECT wants page-aligned
// transfers); 1 to 4096 operations in flight per stream.
inline constexpr std::int64_t kIoBlockAlign = 4096;
inline constexpr std::int64_t kMaxIoBlockSize = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxIoQueueDepth = 4096;

struct IoSetting {
  std::int64_t block_size = kDefaultIoBlockSize;
  std::int64_t queue_depth = kDefaultIoQueueDepth;
  bool operator==(const IoSetting&) const = default;
};

}  // namespace mlpo
