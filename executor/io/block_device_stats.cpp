#include "executor/io/block_device_stats.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <vector>

namespace mlpo::io {
namespace {

// Fields of /sys/block/<dev>/stat (Documentation/block/stat.rst), 0-based.
constexpr std::size_t kReadsCompleted = 0;
constexpr std::size_t kSectorsRead = 2;
constexpr std::size_t kWritesCompleted = 4;
constexpr std::size_t kSectorsWritten = 6;
constexpr std::size_t kIoTicks = 9;
constexpr std::uint64_t kSector = 512;

std::optional<std::vector<std::uint64_t>> read_fields(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::vector<std::uint64_t> fields;
  std::uint64_t v;
  while (in >> v) fields.push_back(v);
  if (fields.size() <= kIoTicks) return std::nullopt;
  return fields;
}

}  // namespace

std::optional<BlockDeviceStats> BlockDeviceStats::of(const std::filesystem::path& directory) {
  // A directory not made yet will live on its nearest existing ancestor's device.
  struct stat st {};
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(directory, ec);
  if (ec) return std::nullopt;
  while (::stat(at.c_str(), &st) != 0) {
    if (at == at.root_path()) return std::nullopt;
    at = at.parent_path();
  }
  if (major(st.st_dev) == 0) return std::nullopt;  // anonymous: tmpfs, overlay, btrfs, NFS, FUSE
  const std::filesystem::path dev =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  const std::filesystem::path real = std::filesystem::canonical(dev, ec);
  if (ec || !read_fields(real / "stat")) return std::nullopt;
  return BlockDeviceStats(real / "stat", real.filename().string());
}

std::optional<BlockDeviceSnapshot> BlockDeviceStats::snapshot() const {
  const auto fields = read_fields(stat_file_);
  if (!fields) return std::nullopt;
  const auto& f = *fields;
  return BlockDeviceSnapshot{f[kIoTicks], f[kSectorsRead] * kSector, f[kSectorsWritten] * kSector,
                             f[kReadsCompleted], f[kWritesCompleted]};
}

BlockDeviceSnapshot operator-(const BlockDeviceSnapshot& after, const BlockDeviceSnapshot& before) {
  return BlockDeviceSnapshot{after.busy_ms - before.busy_ms, after.read_bytes - before.read_bytes,
                             after.write_bytes - before.write_bytes,
                             after.read_requests - before.read_requests,
                             after.write_requests - before.write_requests};
}

}  // namespace mlpo::io
