#include "core/thread_pool.hpp"

#include <algorithm>

namespace mlpo {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
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
  if (ranges_[0].first < ranges_[0].second) fn(ranges_[0].first, ranges_[0].second);
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
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
    if (range.first < range.second) (*job)(range.first, range.second);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace mlpo
