#pragma once
// BlockDeviceStats: the kernel's counters of the block device a directory lives on, read from
// /sys/dev/block/MAJOR:MINOR/stat (docs/io.md): milliseconds with at least one request in the
// device (io_ticks), and bytes read and written. They are node-wide: every process's I/O to
// that device counts, ours and anyone else's. The update phase logs the device's busy time next
// to its own wall time: a slow update with the device busy throughout was limited by the device;
// one with the device idle part of the time lost that time in the pipeline.
//
// A directory has no block device on tmpfs, network and FUSE file systems, overlay and btrfs
// (anonymous device numbers), or where /sys is not mounted: of() then returns nullopt.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mlpo::io {

struct BlockDeviceSnapshot {
  std::uint64_t busy_ms = 0;         // io_ticks: time with at least one request in the device
  std::uint64_t read_bytes = 0;      // sectors read x 512
  std::uint64_t write_bytes = 0;     // sectors written x 512
  std::uint64_t read_requests = 0;   // reads completed (after the block layer's merging)
  std::uint64_t write_requests = 0;  // writes completed
};

// The counters' growth from `before` to `after` (both of the same device).
BlockDeviceSnapshot operator-(const BlockDeviceSnapshot& after, const BlockDeviceSnapshot& before);

class BlockDeviceStats {
 public:
  // The device (or partition) holding `directory` (or, while it does not exist yet, its nearest
  // existing ancestor), or nullopt when there is none to read.
  static std::optional<BlockDeviceStats> of(const std::filesystem::path& directory);

  // Reads the counters now (one small read of the stat file); nullopt if the file went away
  // (the device was removed) or no longer parses. A diagnostic never fails the I/O it watches.
  std::optional<BlockDeviceSnapshot> snapshot() const;

  // The kernel's name of the device, e.g. "vda" or "nvme0n1p2".
  const std::string& name() const { return name_; }

 private:
  BlockDeviceStats(std::filesystem::path stat_file, std::string name)
      : stat_file_(std::move(stat_file)), name_(std::move(name)) {}
  std::filesystem::path stat_file_;
  std::string name_;
};

}  // namespace mlpo::io
