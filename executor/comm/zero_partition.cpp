#include "executor/comm/zero_partition.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace mlpo::comm {

ZeroPartition::ZeroPartition(std::int64_t total, int ranks, int rank) : total_(total), rank_(rank) {
  if (ranks <= 0) throw Error("data-parallel ranks: must be > 0, got " + std::to_string(ranks));
  for (int r = 0; r < ranks; ++r) shards_.push_back(shard_for(total, ranks, r));
  MLPO_CHECK(rank >= 0 && rank < ranks, "rank " + std::to_string(rank) + " of " + std::to_string(ranks));
}

std::vector<std::int64_t> ZeroPartition::counts(ParamRange range) const {
  MLPO_CHECK(range.begin >= 0 && range.begin <= range.end && range.end <= total_,
             "range [" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ") of " +
                 std::to_string(total_));
  std::vector<std::int64_t> counts(shards_.size());
  for (std::size_t r = 0; r < shards_.size(); ++r) {
    const std::int64_t lo = std::max(range.begin, shards_[r].global_begin);
    const std::int64_t hi = std::min(range.end, shards_[r].global_end());
    counts[r] = std::max<std::int64_t>(0, hi - lo);
  }
  return counts;
}

ParamRange ZeroPartition::my_piece(ParamRange range) const {
  const RankShard& s = mine();
  const std::int64_t lo = std::max(range.begin, s.global_begin);
  const std::int64_t hi = std::min(range.end, s.global_end());
  if (hi <= lo) return {s.global_begin, s.global_begin};
  return {lo, hi};
}

}  // namespace mlpo::comm
