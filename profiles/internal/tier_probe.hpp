#pragma once
// Tier probe: how fast one storage tier streams through the executor's own I/O engine
// (executor/io), at 1, 2, 4, ... concurrent streams — the contention curve the simulator and
// tuner use to pick per-tier concurrency limits.
//
// A *stream* is what one rank of the offload engine is: its own TierIo (one io_uring and one
// I/O thread), its own file, `queue_depth` operations of `block_size` in flight, fed by its own
// thread with two requests outstanding. N streams = N rings on the same directory at once,
// exactly the contention N ranks on a node produce (fio's numjobs=N with iodepth=queue_depth).
//
// Per point (N streams) and repetition: a sequential write of N fresh files of
// `bytes_per_stream` each (preallocated like state files, O_DIRECT unless the file system is
// tmpfs or refuses it; the engine falls back to buffered with one warning), a stream's clock
// stopping when its last O_DIRECT write completed (the device has the data; the offload
// engine never syncs state writes either) or, for a buffered file, after an fsync; then a
// sequential read of them back. GB/s = all bytes / (last stream done - start). Then reads and
// writes at once: each stream reads its file from the start while rewriting it from the
// middle on, on its one engine (what one rank's reader and writer threads do to a tier during
// the update); each direction's GB/s is taken while the other is still busy (the faster one
// wraps around until both are done), writes timed as in the write pass. Every 4 KiB page
// written carries its stream and file offset, and every page read back is checked against
// them, so a read that returns the wrong place, stale data or zeros fails the probe.
// First-byte latency: 4 KiB reads at random offsets of the 1-stream file, one at a time.
// Everything lives in one scratch directory
// `PATH/.mlpo-profile-<pid>` that is removed when the probe ends, fails or is interrupted.
// Cost: (1 + 2 + 4 + ...) x bytes_per_stream x 4 x repetitions bytes of I/O or a little more
// (the faster direction of the mixed pass keeps going), once more for every extra I/O setting
// (io_settings); pinned memory max_streams x 4 x request bytes.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/tier_kind.hpp"
#include "executor/io/tier.hpp"
#include "core/diagnostics.hpp"

namespace mlpo::profiles {

struct TierSpec {
  std::string name;
  std::filesystem::path path;
  TierKind kind = TierKind::other;
};

// "NAME=PATH[:KIND]" (KIND: host, nvme, remote, other). Without KIND the kind is detected
// from the file system (detect_tier_kind). Throws mlpo::Error naming the text.
TierSpec parse_tier_spec(const std::string& text);
// tmpfs/ramfs -> host; NFS, CIFS/SMB, Lustre, GPFS, BeeGFS, Ceph, FUSE -> remote; a file
// system on an NVMe block device -> nvme; anything else (or unknown) -> other.
TierKind detect_tier_kind(const std::filesystem::path& path);

// "BS:QD[,BS:QD...]" as core's IoSetting (e.g. "256KiB:32,4MiB:4"; empty: none). Throws
// mlpo::Error naming the text and the expected form.
std::vector<IoSetting> parse_io_settings(const std::string& text);

struct TierProbeOptions {
  std::uint64_t bytes_per_stream = std::uint64_t{1} << 30;
  std::uint64_t block_size = static_cast<std::uint64_t>(kDefaultIoBlockSize);
  unsigned queue_depth = static_cast<unsigned>(kDefaultIoQueueDepth);
  // More settings whose write, read and read+write curves are measured too (TierIoSetting;
  // each costs about as much as the main curves; latency and interference: main only).
  std::vector<IoSetting> io_settings;
  unsigned max_streams = 8;
  int repetitions = 5;
  int latency_samples = 64;
};

// What will be measured on one tier, after validating its path and sizing the probe to the
// free space (and, on tmpfs, to half the available memory).
struct TierProbePlan {
  TierSpec spec;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t free_bytes = 0;
  std::uint64_t bytes_per_stream = 0;  // after clamping
  std::uint64_t request_bytes = 0;     // bytes per engine request (2 outstanding per stream)
  std::vector<unsigned> streams;       // 1, 2, 4, ..., max_streams
  std::string clamp_note;              // one line when bytes_per_stream was reduced, else empty
};

// Throws mlpo::Error (one line, naming the tier and path, saying what to do) when the path
// is missing, not a directory, not writable, or has too little free space for even a
// reduced probe (4 requests per stream). Creates nothing.
TierProbePlan plan_tier_probe(const TierSpec& spec, const TierProbeOptions& options);

// Runs the probe. Throws Interrupted (core/interrupt.hpp) after cleaning up on SIGINT/SIGTERM,
// mlpo::Error on an I/O failure or a verification mismatch; never leaves files behind.
TierProfile probe_tier(const TierProbePlan& plan, const TierProbeOptions& options,
                       const Diagnostics& diagnostics);

}  // namespace mlpo::profiles
