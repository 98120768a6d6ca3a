#pragma once
// LocalRankGroup: the ranks of an update-only run on this node, as forked processes that
// share one anonymous memory mapping made before the fork: a process-shared barrier, the
// per-chunk gradient square sums (for the global norm), the per-chunk state digests and
// each rank's per-step statistics. Single-rank runs use the same code with a group of one.
// The parent owns the mapping (RAII); a rank that dies is noticed by the parent, which ends
// the others (ranks never wait on a dead peer for long: see UpdateOnlyRun).

#include <pthread.h>

#include <cstdint>
#include <span>

#include "executor/update_only/state_digest.hpp"

namespace mlpo::update_only {

inline constexpr int kMaxStatTiers = 8;

// What one rank reports for one step (plain data: lives in shared memory).
struct RankStepRecord {
  double update_s = 0, backward_s = 0, adam_s = 0, prefetch_stall_s = 0, grad_norm = 0;
  double gradient_flush_s = 0;  // flush-fp32 only: writing the fp32 gradients to the tier
  double cpu_steal = -1;        // the node's CPU time the hypervisor took in the step; < 0: unknown
  std::int64_t cache_hits = 0, reads = 0, writes = 0, elements = 0;
  std::uint64_t read_bytes[kMaxStatTiers] = {}, write_bytes[kMaxStatTiers] = {};
  double busy_s[kMaxStatTiers] = {}, slot_wait_s[kMaxStatTiers] = {};
  // The tier's block device over this rank's update (node-wide counters); busy < 0: no device.
  double device_busy_s[kMaxStatTiers] = {};
  std::uint64_t device_read_bytes[kMaxStatTiers] = {}, device_write_bytes[kMaxStatTiers] = {};
};

class LocalRankGroup {
 public:
  LocalRankGroup(int ranks, std::int64_t chunks, std::int64_t steps);
  ~LocalRankGroup();
  LocalRankGroup(const LocalRankGroup&) = delete;
  LocalRankGroup& operator=(const LocalRankGroup&) = delete;

  int ranks() const { return ranks_; }
  void barrier();
  std::span<double> chunk_sums() { return {sums_, static_cast<std::size_t>(chunks_)}; }
  std::span<Sha256> chunk_digests() { return {digests_, static_cast<std::size_t>(chunks_)}; }
  RankStepRecord& record(int rank, std::int64_t step) {
    return records_[static_cast<std::size_t>(step * ranks_ + rank)];
  }

 private:
  int ranks_;
  std::int64_t chunks_;
  std::int64_t steps_;
  std::size_t bytes_ = 0;
  void* base_ = nullptr;
  pthread_barrier_t* barrier_ = nullptr;
  double* sums_ = nullptr;
  Sha256* digests_ = nullptr;
  RankStepRecord* records_ = nullptr;
};

}  // namespace mlpo::update_only
