#include "core/thread_pool.hpp"
#include "core/usable_cores.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace mlpo {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = usable_cores();
  ranges_.resize(threads);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain,
                              const std::function<void(std::size_t, std::size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t threads = size();
  const std::size_t chunks = (n + grain - 1) / grain;
  const std::size_t per = (chunks + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) {
    std::size_t b = std::min(n, t * per * grain);
    std::size_t e = std::min(n, (t + 1) * per * grain);
    ranges_[t] = {b, e};
  }
  if (threads == 1 || ranges_[1].first >= ranges_[1].second) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    pending_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  // An exception from fn, on this thread or a worker, is rethrown here only after every
  // worker is done with the job: fn must not be left running while the caller unwinds.
  std::exception_ptr first;
  try {
    if (ranges_[0].first < ranges_[0].second) fn(ranges_[0].first, ranges_[0].second);
  } catch (...) {
    first = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (!first) first = std::exchange(worker_error_, nullptr);
  worker_error_ = nullptr;
  if (first) std::rethrow_exception(first);
}

void ThreadPool::worker_loop(unsigned index) {
  std::size_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* job;
    std::pair<std::size_t, std::size_t> range;
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      range = ranges_[index];
    }
    std::exception_ptr error;
    try {
      if (range.first < range.second) (*job)(range.first, range.second);
    } catch (...) {
      error = std::current_exception();  // out of a worker it would terminate the process
    }
    {
      std::lock_guard lock(mutex_);
      if (error && !worker_error_) worker_error_ = error;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace mlpo
