#pragma once
// LaunchedRankGroup: the ranks of an update-only run that a launcher (mpirun, srun) started,
// one process per rank, on one node or several, over a host-memory communicator. The chunk
// sums travel as an all-reduce of a zero-filled vector holding each rank's own slice (exact:
// every other rank adds zeros); at collect() the records travel as bytes (an all-gather) and
// the digests as an all-reduce of their 64-bit words, again with zeros elsewhere. A rank that
// fails ends the job through the communicator (comm::run_ranked), so none waits on it.

#include <cstdint>
#include <span>
#include <vector>

#include "executor/update_only/internal/rank_group.hpp"

namespace mlpo::comm {
class Communicator;
}

namespace mlpo::update_only {

class LaunchedRankGroup final : public RankGroup {
 public:
  LaunchedRankGroup(comm::Communicator& comm, std::int64_t chunks, std::int64_t steps);

  int ranks() const override;
  void barrier() override;
  std::span<const double> share_chunk_sums(std::span<const double> mine, std::int64_t first) override;
  std::span<Sha256> chunk_digests() override { return digests_; }
  RankStepRecord& record(int rank, std::int64_t step) override {
    return records_[static_cast<std::size_t>(rank * steps_ + step)];  // rank-major: one block per rank
  }
  void collect() override;

 private:
  comm::Communicator& comm_;
  std::int64_t steps_;
  std::vector<double> sums_;
  std::vector<Sha256> digests_;
  std::vector<RankStepRecord> records_;
};

}  // namespace mlpo::update_only
