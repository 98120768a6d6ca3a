#pragma once
// PipelineReaders: the read side of one update phase. Every file tier with reads in the
// schedule has a reader thread that reads that tier's misses (steps neither resident nor
// cache hits) in step order, each into a buffer of the run's pool (the state, and the fp32
// gradient after it in baseline mode), holding one of the tier's node-wide TierSlots while
// the read is in flight, and only once any queued write of the same subgroup is done.
//
// Prefetch depth: the window counts reads, not steps. A reader may start the read of step
// `pos` while fewer than `prefetch_depth` reads before it are still to be taken by AdamW, so
// cache hits and resident subgroups (at the head of an alternating iteration: the whole
// cache) do not hold the tiers idle. A read counts as consumed once take() hands it over:
// with depth 1 the next miss is read while AdamW updates this one (docs/formats.md:
// "subgroups read ahead of the one being updated"; the simulator gives its window permit
// back at the same point). Counting it only after its AdamW would leave the tier idle for
// one subgroup's AdamW per miss.
//
// Waits are on condition variables signalled by the event that ends them: take() for the
// window, a finished read for take(), a finished write for a buffer (PipelineWriters), and a
// failure anywhere (PipelineError) for all of them.
//
// Errors: a failed read goes to the run's PipelineError and its reader stops. join() after
// the last step; destroyed without join() (an exception unwinds the update), it fails the
// run first so every reader stops waiting, then joins. Never hangs, never terminates.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/update_order.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_slots.hpp"
#include "executor/offload/internal/pipeline_error.hpp"
#include "executor/offload/internal/pipeline_writers.hpp"
#include "executor/offload/state_store.hpp"

namespace mlpo::offload {

struct ReadOptions {
  std::uint64_t buffer_bytes = 0;  // one subgroup buffer of the pool
  std::int64_t prefetch_depth = 1;
  bool fp32_grads = false;  // also read the fp32 gradient extent (baseline mode)
};

class PipelineReaders {
 public:
  // Checks that `steps` agree with the store on residency, then starts the readers.
  // Everything passed in must outlive this object; `writers` must outlive its threads.
  PipelineReaders(StateStore& store, io::PinnedBufferPool& pool, const std::vector<io::TierSlots*>& slots,
                  const std::vector<UpdateStep>& steps, ReadOptions options, PipelineWriters& writers,
                  PipelineError& error);
  ~PipelineReaders();
  PipelineReaders(const PipelineReaders&) = delete;
  PipelineReaders& operator=(const PipelineReaders&) = delete;

  // Blocks until the read of step `pos` (a miss) is done and hands over its buffer, which
  // lets the readers read one further ahead; nullopt once the run failed.
  std::optional<io::PinnedBuffer> take(std::size_t pos);

  // Joins the readers (after the last step they finish on their own; after a failure every
  // wait has been woken).
  void join();

 private:
  void run(std::size_t tier);
  bool wait_for_window(std::size_t pos);
  void read(std::size_t tier, std::size_t pos, io::PinnedBuffer& lease);
  void stop_and_join();

  StateStore& store_;
  io::PinnedBufferPool& pool_;
  const std::vector<io::TierSlots*>& slots_;
  const std::vector<UpdateStep>& steps_;
  ReadOptions options_;
  PipelineWriters& writers_;
  PipelineError& error_;
  std::vector<std::vector<std::size_t>> misses_;  // per file tier: its steps to read, in order
  std::vector<std::int64_t> reads_before_;        // reads_before_[pos]: misses among steps < pos
  std::mutex mutex_;
  std::condition_variable changed_;                     // a read finished or was taken, or the run failed
  std::int64_t taken_ = 0;                              // reads handed to AdamW so far
  std::vector<std::optional<io::PinnedBuffer>> ready_;  // per step: its finished read
  std::vector<std::jthread> threads_;
  bool joined_ = false;
};

}  // namespace mlpo::offload
