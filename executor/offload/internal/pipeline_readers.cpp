#include "executor/offload/internal/pipeline_readers.hpp"

#include <exception>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "executor/io/io_thread_slice.hpp"

namespace mlpo::offload {

PipelineReaders::PipelineReaders(StateStore& store, io::PinnedBufferPool& pool,
                                 const std::vector<io::TierSlots*>& slots,
                                 const std::vector<UpdateStep>& steps, ReadOptions options,
                                 PipelineWriters& writers, PipelineError& error)
    : store_(store),
      pool_(pool),
      slots_(slots),
      steps_(steps),
      options_(options),
      writers_(writers),
      error_(error),
      misses_(store.io_tier_count()),
      reads_before_(steps.size() + 1, 0),
      ready_(steps.size()) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    MLPO_CHECK(steps[i].resident == store_.resident(steps[i].subgroup),
               "step of subgroup " + std::to_string(steps[i].subgroup) +
                   " disagrees with the store on residency "
                   "(plan the iteration with the store's resident() predicate)");
    const bool miss = !steps[i].resident && !steps[i].hit;
    if (miss) misses_[static_cast<std::size_t>(store_.io_tier(steps[i].subgroup))].push_back(i);
    reads_before_[i + 1] = reads_before_[i] + (miss ? 1 : 0);
  }
  error_.wake_on_failure(mutex_, changed_);
  try {
    for (std::size_t t = 0; t < misses_.size(); ++t)
      if (!misses_[t].empty())
        threads_.emplace_back([this, t] {
          io::request_short_slice_for_this_thread();  // io_thread_slice.hpp: ahead of AdamW
          run(t);
        });
  } catch (...) {  // a thread that did not start: stop the others before the members go
    stop_and_join();
    error_.stop_waking(mutex_);
    throw;
  }
}

PipelineReaders::~PipelineReaders() {
  if (!joined_) stop_and_join();
  error_.stop_waking(mutex_);
}

void PipelineReaders::stop_and_join() {
  error_.set("the update phase was stopped by an error");
  join();
}

void PipelineReaders::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  joined_ = true;
}

std::optional<io::PinnedBuffer> PipelineReaders::take(std::size_t pos) {
  std::optional<io::PinnedBuffer> lease;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return error_.failed() || ready_[pos].has_value(); });
    if (error_.failed()) return std::nullopt;
    lease = std::move(ready_[pos]);
    ready_[pos].reset();
    ++taken_;
  }
  changed_.notify_all();  // the window moved
  return lease;
}

// False once the run failed.
bool PipelineReaders::wait_for_window(std::size_t pos) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock,
                [&] { return error_.failed() || reads_before_[pos] < taken_ + options_.prefetch_depth; });
  return !error_.failed();
}

void PipelineReaders::run(std::size_t t) {
  for (std::size_t pos : misses_[t]) {
    if (!wait_for_window(pos)) return;
    std::optional<io::PinnedBuffer> lease;
    try {
      lease = writers_.acquire(pool_, options_.buffer_bytes);
      if (!lease) return;
      writers_.wait_written(steps_[pos].subgroup);
      if (error_.failed()) return;
      read(t, pos, *lease);
    } catch (const std::exception& e) {  // never out of the thread: that would terminate the process
      error_.set(e.what());
      return;
    }
    {
      std::lock_guard lock(mutex_);
      ready_[pos] = std::move(*lease);
    }
    changed_.notify_all();
  }
}

void PipelineReaders::read(std::size_t t, std::size_t pos, io::PinnedBuffer& lease) {
  const std::int64_t s = steps_[pos].subgroup;
  io::TierSlot slot;  // held while the reads are in flight
  if (slots_[t]) slot = slots_[t]->acquire(io::SlotUse::read);
  io::RequestGroup group;
  group.add(store_.read_state(s, lease.data()));
  if (options_.fp32_grads) group.add(store_.read_grad(s, lease.data() + store_.layout().extent_bytes()));
  group.wait();
}

}  // namespace mlpo::offload
