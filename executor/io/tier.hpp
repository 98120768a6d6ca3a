#pragma once
// Tier: one storage level the optimizer state can live on (host memory, node-local NVMe, a
// remote file system, any other path) and how the engine drives it. A plain value; TierSet
// turns a list of them into running I/O engines (one io_uring and one I/O thread per tier).
// The engine drives every tier alike: the kind of storage (core/tier_kind.hpp) is the plan's
// business, which sets direct_io and maps `host` tiers' files (StateStore).
// What MLPO puts under a tier path: tier_layout.hpp.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/io_setting.hpp"
#include "core/units.hpp"

namespace mlpo::io {

// O_DIRECT needs offsets, lengths and buffers aligned to this many bytes.
inline constexpr std::uint64_t kIoAlign = 4096;

struct Tier {
  std::string name;            // shown in every message and counter ("nvme", "shm")
  std::filesystem::path path;  // existing directory the tier's files live under
  // Bytes per I/O operation (multiple of kIoAlign, <= 1 GiB), and the most I/O operations in
  // flight on this tier, all requests together: a plan's IoSetting (core/io_setting.hpp).
  std::uint64_t block_size = static_cast<std::uint64_t>(kDefaultIoBlockSize);
  unsigned queue_depth = static_cast<unsigned>(kDefaultIoQueueDepth);
  bool direct_io = true;  // O_DIRECT (falls back to buffered, with one warning, where refused)
  bool crc = false;       // record CRC32C per written extent, verify it on read
};

// Throws mlpo::Error when a field is unusable (empty name, block size not a multiple of 4 KiB...).
void validate(const Tier& tier);

}  // namespace mlpo::io
