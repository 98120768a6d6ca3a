#pragma once
// Capacity check: before anything is written, every tier must have room for the bytes the
// plan puts on it. One statvfs per tier; a shortfall is an mlpo::Error listing every short
// tier, one per line, as
//   tier 'nvme' (/mnt/nvme): needs 48.2 GiB, 31.0 GiB free
// Tiers that share one file system are checked against its free space together.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "executor/io/tier.hpp"

namespace mlpo::io {

struct CapacityNeed {
  const Tier* tier = nullptr;
  std::uint64_t bytes = 0;  // bytes still to be allocated on that tier
};

// Bytes an unprivileged writer can still allocate under `path` (statvfs f_bavail * f_frsize).
// Throws mlpo::Error naming `who` when the path cannot be inspected.
std::uint64_t free_bytes(const std::filesystem::path& path, const std::string& who);

// Throws mlpo::Error when some tier has less free space than it needs (see above), or when a
// tier path cannot be inspected.
void check_capacity(std::span<const CapacityNeed> needs);

}  // namespace mlpo::io
