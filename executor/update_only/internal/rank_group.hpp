#pragma once
// RankGroup: what the ranks of an update-only run share while they run, whoever started them.
// Each rank owns 1/R of the state (ZeRO-3) and needs the others for three things: a barrier,
// the per-chunk gradient square sums of every rank (the global norm, each step), and at the end
// every rank's per-step statistics and chunk digests, which the first rank turns into the log,
// the summary and the state hash. Two kinds: LocalRankGroup (ranks this process forks, over
// shared memory) and LaunchedRankGroup (ranks mpirun/srun launched, over a communicator).

#include <cstdint>
#include <span>

#include "executor/update_only/internal/state_digest.hpp"

namespace mlpo::update_only {

inline constexpr int kMaxStatTiers = 8;

// What one rank reports for one step (plain data: lives in shared memory or travels as bytes).
struct RankStepRecord {
  double update_s = 0, backward_s = 0, adam_s = 0, prefetch_stall_s = 0, grad_norm = 0;
  double gradient_flush_s = 0;  // flush-fp32 only: writing the fp32 gradients to the tier
  double cpu_steal = -1;        // the node's CPU time the hypervisor took in the step; < 0: unknown
  double update_cpu_idle = -1;  // the node's idle share of CPU time over the update; < 0: unknown
  std::int64_t cache_hits = 0, reads = 0, writes = 0, elements = 0;
  std::uint64_t read_bytes[kMaxStatTiers] = {}, write_bytes[kMaxStatTiers] = {};
  double busy_s[kMaxStatTiers] = {}, slot_wait_s[kMaxStatTiers] = {};
  // The tier's block device over this rank's update (node-wide counters); busy < 0: no device.
  double device_busy_s[kMaxStatTiers] = {};
  std::uint64_t device_read_bytes[kMaxStatTiers] = {}, device_write_bytes[kMaxStatTiers] = {};
};

class RankGroup {
 public:
  virtual ~RankGroup() = default;

  virtual int ranks() const = 0;
  // Returns when every rank has entered it.
  virtual void barrier() = 0;
  // Every rank calls it once per step with its own chunks' square sums, which start at global
  // chunk `first`; returns the sums of all chunks of all ranks (valid until the next call,
  // which no rank makes before the barrier that follows this one's reading).
  virtual std::span<const double> share_chunk_sums(std::span<const double> mine, std::int64_t first) = 0;
  // The digests of all chunks: each rank writes its own; complete after collect().
  virtual std::span<Sha256> chunk_digests() = 0;
  // Rank `rank`'s statistics of step `step` (0-based): each rank writes its own; every rank's
  // are readable after collect().
  virtual RankStepRecord& record(int rank, std::int64_t step) = 0;
  // After every rank's last step: brings every rank's records and digests to this process
  // (every rank calls it).
  virtual void collect() = 0;
};

}  // namespace mlpo::update_only
