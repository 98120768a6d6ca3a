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

#include "executor/update_only/internal/rank_group.hpp"

namespace mlpo::update_only {

class LocalRankGroup final : public RankGroup {
 public:
  LocalRankGroup(int ranks, std::int64_t chunks, std::int64_t steps);
  ~LocalRankGroup();
  LocalRankGroup(const LocalRankGroup&) = delete;
  LocalRankGroup& operator=(const LocalRankGroup&) = delete;

  int ranks() const override { return ranks_; }
  void barrier() override;
  std::span<const double> share_chunk_sums(std::span<const double> mine, std::int64_t first) override;
  std::span<Sha256> chunk_digests() override { return {digests_, static_cast<std::size_t>(chunks_)}; }
  RankStepRecord& record(int rank, std::int64_t step) override {
    return records_[static_cast<std::size_t>(step * ranks_ + rank)];
  }
  void collect() override {}  // the records and digests are in the shared mapping already

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
