#pragma once
// RankShard: the slice of the model's flat parameter index that one rank owns under ZeRO-3
// partitioning — of the bf16 weights, the gradients and the fp32 optimizer state. The one
// definition of a rank's shard: the offload engine (StateStore, UpdatePipeline) covers it,
// comm's ZeroPartition splits layer ranges over it, training and the update-only run cut
// their gradients by it. Shard boundaries are multiples of kNormChunk elements, so every
// fixed-size chunk of the global index (the unit of the gradient-norm reduction and of the
// state digest) lies inside exactly one rank: results reduced per chunk then do not depend
// on how many ranks there are.
//
// The simulator and tuner account with Accounting::params_per_rank (core/accounting.hpp),
// which is unrounded_share below: at most kNormChunk - 1 elements less than the largest
// shard here.

#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kNormChunk = 4096;  // elements

struct RankShard {
  int rank = 0;
  int ranks = 1;
  std::int64_t total = 0;         // parameters of the whole model
  std::int64_t global_begin = 0;  // first global element this rank owns
  std::int64_t elements = 0;      // may be 0 for trailing ranks of a tiny model

  std::int64_t global_end() const { return global_begin + elements; }
};

// ceil(total / ranks): a rank's even share of `total` elements before shard_for rounds it up
// to kNormChunk. The one formula of a rank's share; Accounting::params_per_rank is this.
inline std::int64_t unrounded_share(std::int64_t total, std::int64_t ranks) {
  return (total + ranks - 1) / ranks;
}

// Rank r owns [r*per, min((r+1)*per, total)) with per = unrounded_share(total, ranks) rounded up
// to kNormChunk. Throws mlpo::Error when ranks or total is not positive.
RankShard shard_for(std::int64_t total, int ranks, int rank);

}  // namespace mlpo
