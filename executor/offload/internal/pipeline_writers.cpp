#include "executor/offload/internal/pipeline_writers.hpp"

#include <exception>
#include <utility>

#include "executor/io/io_thread_slice.hpp"

namespace mlpo::offload {

PipelineWriters::PipelineWriters(StateStore& store, const std::vector<io::TierSlots*>& slots,
                                 PipelineError& error)
    : store_(store),
      slots_(slots),
      error_(error),
      queues_(store.io_tier_count()),
      threads_(store.io_tier_count()) {
  error_.wake_on_failure(mutex_, done_);
}

PipelineWriters::~PipelineWriters() {
  close();
  error_.stop_waking(mutex_);
}

void PipelineWriters::push(WriteJob job) {
  const auto t = static_cast<std::size_t>(store_.io_tier(job.subgroup));
  {
    std::lock_guard lock(mutex_);
    // A tier's thread starts with its first job: an update whose subgroups all stay cached
    // or resident starts none (a thread's start and join cost ~0.1 ms, a tiny model's update
    // about 1 ms). It runs once this lock is released.
    if (!threads_[t].joinable())
      threads_[t] = std::jthread([this, t] {
        io::request_short_slice_for_this_thread();  // io_thread_slice.hpp: ahead of AdamW
        run(t);
      });  // throws before the job is queued: its buffer goes back with it
    if (!job.gradient) pending_.insert(job.subgroup);
    queues_[t].push_back(std::move(job));
  }
  queued_.notify_all();
}

void PipelineWriters::wait_written(std::int64_t subgroup) {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return error_.failed() || !pending_.contains(subgroup); });
}

std::optional<io::PinnedBuffer> PipelineWriters::acquire(io::PinnedBufferPool& pool, std::uint64_t bytes) {
  std::optional<io::PinnedBuffer> lease;
  std::unique_lock lock(mutex_);
  // A job returns its buffer before it takes mutex_ to signal done_, so no return is missed.
  done_.wait(lock, [&] { return error_.failed() || (lease = pool.try_acquire(bytes)).has_value(); });
  if (error_.failed()) return std::nullopt;
  return lease;
}

void PipelineWriters::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  queued_.notify_all();
  for (auto& th : threads_)
    if (th.joinable()) th.join();
}

void PipelineWriters::run(std::size_t t) {
  for (;;) {
    WriteJob job;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return closed_ || !queues_[t].empty(); });
      if (queues_[t].empty()) return;
      job = std::move(queues_[t].front());
      queues_[t].pop_front();
    }
    if (!error_.failed()) write(t, job);
    job.buffer.reset();  // back to the pool: readers may be waiting for it
    {
      std::lock_guard lock(mutex_);
      if (!job.gradient) pending_.erase(job.subgroup);
    }
    done_.notify_all();
  }
}

void PipelineWriters::write(std::size_t t, const WriteJob& job) {
  try {
    io::TierSlot slot;  // held while the write is in flight
    if (slots_[t]) slot = slots_[t]->acquire(io::SlotUse::write);
    auto req = job.gradient ? store_.write_grad(job.subgroup, job.buffer.data())
                            : store_.write_state(job.subgroup, job.buffer.data());
    req.wait();
    if (!job.gradient) written_++;
  } catch (const std::exception& e) {  // never out of the thread: that would terminate the process
    error_.set(e.what());
  }
}

}  // namespace mlpo::offload
