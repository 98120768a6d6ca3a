#include "core/rank_shard.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace mlpo {

RankShard shard_for(std::int64_t total, int ranks, int rank) {
  if (total <= 0) throw Error("--params: must be > 0, got " + std::to_string(total));
  if (ranks <= 0) throw Error("--ranks: must be > 0, got " + std::to_string(ranks));
  MLPO_CHECK(rank >= 0 && rank < ranks, "rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  std::int64_t per = unrounded_share(total, ranks);
  per = (per + kNormChunk - 1) / kNormChunk * kNormChunk;
  RankShard s;
  s.rank = rank;
  s.ranks = ranks;
  s.total = total;
  s.global_begin = std::min(total, per * rank);
  s.elements = std::min(total, per * (rank + 1)) - s.global_begin;
  return s;
}

}  // namespace mlpo
