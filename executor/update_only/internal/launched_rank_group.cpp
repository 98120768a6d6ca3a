#include "executor/update_only/internal/launched_rank_group.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "executor/comm/communicator.hpp"

namespace mlpo::update_only {

static_assert(std::is_trivially_copyable_v<RankStepRecord>, "records travel as bytes");
static_assert(sizeof(Sha256) % sizeof(std::int64_t) == 0, "digests travel as 64-bit words");

LaunchedRankGroup::LaunchedRankGroup(comm::Communicator& comm, std::int64_t chunks, std::int64_t steps)
    : comm_(comm),
      steps_(steps),
      sums_(static_cast<std::size_t>(chunks)),
      digests_(static_cast<std::size_t>(chunks)),
      records_(static_cast<std::size_t>(comm.size() * steps)) {}

int LaunchedRankGroup::ranks() const { return comm_.size(); }

void LaunchedRankGroup::barrier() { comm_.barrier(); }

std::span<const double> LaunchedRankGroup::share_chunk_sums(std::span<const double> mine,
                                                            std::int64_t first) {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  std::copy(mine.begin(), mine.end(), sums_.begin() + first);
  comm_.all_reduce_sum(std::span<double>(sums_));
  return sums_;
}

void LaunchedRankGroup::collect() {
  // Records: this rank's block, then everyone's.
  const std::size_t block = sizeof(RankStepRecord) * static_cast<std::size_t>(steps_);
  std::vector<std::byte> mine(block), all(block * static_cast<std::size_t>(comm_.size()));
  std::memcpy(mine.data(), &records_[static_cast<std::size_t>(comm_.rank() * steps_)], block);
  comm_.all_gather(std::span<const std::byte>(mine), std::span<std::byte>(all));
  std::memcpy(records_.data(), all.data(), all.size());
  // Digests: each chunk is written by one rank only and is zero on the others.
  std::vector<std::int64_t> words(digests_.size() * sizeof(Sha256) / sizeof(std::int64_t));
  std::memcpy(words.data(), digests_.data(), words.size() * sizeof(std::int64_t));
  comm_.all_reduce_sum(std::span<std::int64_t>(words));
  std::memcpy(digests_.data(), words.data(), words.size() * sizeof(std::int64_t));
}

}  // namespace mlpo::update_only
