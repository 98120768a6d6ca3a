#pragma once
// ZeroPartition: ZeRO-3 ownership of the flat parameter index. Rank r owns the shard
// shard_for(total, ranks, r) (core/rank_shard.hpp: the one definition of a rank's shard, the
// same chunk-aligned shard its optimizer state covers) of the bf16 weights, of the gradients
// and of the fp32 optimizer state. Shards are contiguous and in rank order, so any range of the index
// (a layer's parameters) splits into one contiguous piece per rank whose concatenation in
// rank order is the range: exactly the counts all_gather and reduce_scatter_sum take.

#include <cstdint>
#include <vector>

#include "core/rank_shard.hpp"

namespace mlpo::comm {

// [begin, end) of the flat parameter index, e.g. one transformer layer's parameters.
struct ParamRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
};

class ZeroPartition {
 public:
  // Throws mlpo::Error when total or ranks is not positive (from shard_for).
  ZeroPartition(std::int64_t total, int ranks, int rank);

  std::int64_t total() const { return total_; }
  int ranks() const { return static_cast<int>(shards_.size()); }
  int rank() const { return rank_; }
  const RankShard& shard(int r) const { return shards_[static_cast<std::size_t>(r)]; }
  const RankShard& mine() const { return shard(rank_); }

  // Elements of `range` in each rank's shard, in rank order (they sum to range.size()).
  // `range` must lie inside [0, total).
  std::vector<std::int64_t> counts(ParamRange range) const;

  // The part of `range` this rank owns, as global indices (empty when none).
  ParamRange my_piece(ParamRange range) const;

 private:
  std::int64_t total_;
  int rank_;
  std::vector<RankShard> shards_;
};

}  // namespace mlpo::comm
