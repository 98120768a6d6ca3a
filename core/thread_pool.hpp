#pragma once
// ThreadPool: a fixed set of worker threads for data-parallel CPU loops (AdamW, GEMM
// epilogues, conversions). parallel_for splits [0, n) into one contiguous static range per
// thread, so which element a thread touches never depends on timing: results that are
// computed per element are identical for any thread count. Owned by whoever creates it and
// passed by reference to the code that uses it; not global.

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mlpo {

class ThreadPool {
 public:
  // threads == 0 means usable_cores(): the CPUs this process may run on.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel, and returns when
  // all are done. The calling thread takes the first range. Ranges are aligned to `grain`
  // elements (except the last). Not reentrant: one parallel_for at a time per pool.
  // If fn throws (on any thread), the first exception is rethrown once every range is done.
  void parallel_for(std::size_t n, std::size_t grain,
                    const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker_loop(unsigned index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> ranges_;
  std::size_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::exception_ptr worker_error_;  // first exception a worker caught in the current job
};

}  // namespace mlpo
