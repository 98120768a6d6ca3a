#include "executor/update_only/internal/local_rank_group.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "core/error.hpp"

namespace mlpo::update_only {

namespace {

std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

LocalRankGroup::LocalRankGroup(int ranks, std::int64_t chunks, std::int64_t steps)
    : ranks_(ranks), chunks_(chunks), steps_(steps) {
  const std::size_t b = align64(sizeof(pthread_barrier_t));
  const std::size_t s = align64(sizeof(double) * static_cast<std::size_t>(chunks));
  const std::size_t d = align64(sizeof(Sha256) * static_cast<std::size_t>(chunks));
  const std::size_t r = sizeof(RankStepRecord) * static_cast<std::size_t>(ranks * steps);
  bytes_ = b + s + d + r;
  base_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED)
    throw Error("cannot map " + std::to_string(bytes_) + " bytes of shared memory for the ranks (" +
                errno_text(errno) + ")");
  auto* bytes = static_cast<std::byte*>(base_);
  barrier_ = reinterpret_cast<pthread_barrier_t*>(bytes);
  sums_ = reinterpret_cast<double*>(bytes + b);
  digests_ = reinterpret_cast<Sha256*>(bytes + b + s);
  records_ = reinterpret_cast<RankStepRecord*>(bytes + b + s + d);
  for (std::int64_t i = 0; i < ranks * steps; ++i) new (&records_[i]) RankStepRecord();
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  MLPO_CHECK(pthread_barrier_init(barrier_, &attr, static_cast<unsigned>(ranks)) == 0,
             "process-shared barrier");
  pthread_barrierattr_destroy(&attr);
}

LocalRankGroup::~LocalRankGroup() {
  if (base_ && base_ != MAP_FAILED) ::munmap(base_, bytes_);
}

void LocalRankGroup::barrier() {
  if (ranks_ > 1) pthread_barrier_wait(barrier_);
}

std::span<const double> LocalRankGroup::share_chunk_sums(std::span<const double> mine, std::int64_t first) {
  std::copy(mine.begin(), mine.end(), sums_ + first);
  barrier();
  return {sums_, static_cast<std::size_t>(chunks_)};
}

}  // namespace mlpo::update_only
