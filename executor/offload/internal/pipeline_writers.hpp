#pragma once
// PipelineWriters: the write side of a pipeline run. One writer thread per file tier, started
// with the tier's first job, drains that tier's queue of WriteJobs in order, each write
// holding one of the tier's node-wide TierSlots (null = no limit) while in flight, and
// returns the job's buffer to the pool as soon as the write is done (also when it failed or
// was skipped).
//
// Errors: a failed write goes to the run's PipelineError; after the first error anywhere the
// writers stop writing but keep draining their queues, so every buffer still comes back.
// close() (also the destructor) waits for every queued job and joins the threads.
//
// Waits: wait_written() and acquire() block on the writers' own condition variable, which
// every finished job and every failure of the run signals: no polling.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_slots.hpp"
#include "executor/offload/internal/pipeline_error.hpp"
#include "executor/offload/state_store.hpp"

namespace mlpo::offload {

struct WriteJob {
  std::int64_t subgroup = 0;
  bool gradient = false;  // the fp32 gradient extent, not the state
  io::PinnedBuffer buffer;
};

class PipelineWriters {
 public:
  // `slots[t]` limits file tier t (null = no limit). Everything passed in must outlive this.
  PipelineWriters(StateStore& store, const std::vector<io::TierSlots*>& slots, PipelineError& error);
  ~PipelineWriters();
  PipelineWriters(const PipelineWriters&) = delete;
  PipelineWriters& operator=(const PipelineWriters&) = delete;

  // Queues a write to the subgroup's tier; the buffer goes back to the pool when it is done.
  void push(WriteJob job);

  // Blocks while a write of this subgroup's state is queued or in flight (a subgroup evicted
  // from the cache early in an iteration may be read again later in the same iteration), or
  // until the run fails.
  void wait_written(std::int64_t subgroup);

  // A lease of `bytes` from `pool`, waiting while none is free: while the writers run, the
  // buffers a pipeline run holds come back to its pool through them (one per finished job).
  // nullopt once the run failed.
  std::optional<io::PinnedBuffer> acquire(io::PinnedBufferPool& pool, std::uint64_t bytes);

  // Waits for every queued job, then joins the threads. Idempotent.
  void close();

  // State writes done so far (gradient writes not counted).
  std::int64_t written() const { return written_.load(); }

 private:
  void run(std::size_t tier);
  void write(std::size_t tier, const WriteJob& job);

  StateStore& store_;
  const std::vector<io::TierSlots*>& slots_;
  PipelineError& error_;
  std::mutex mutex_;
  std::condition_variable queued_;            // a job was queued, or close()
  std::condition_variable done_;              // a job finished (its buffer is back), or the run failed
  std::unordered_set<std::int64_t> pending_;  // subgroups whose state write is queued or in flight
  std::vector<std::deque<WriteJob>> queues_;  // per file tier
  std::vector<std::jthread> threads_;
  std::atomic<std::int64_t> written_{0};
  bool closed_ = false;
};

}  // namespace mlpo::offload
