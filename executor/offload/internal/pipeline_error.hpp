#pragma once
// PipelineError: the first error of one pipeline run (an update phase, a state load, a
// gradient flush), shared by the calling thread and the run's reader and writer threads.
// set() keeps the first message and wakes every wait of the run: each wait registers its
// mutex and condition variable with wake_on_failure() and checks failed() in its predicate,
// so a failure anywhere ends every wait without polling. rethrow() throws the first message
// as mlpo::Error. Thread-safe; must outlive every thread and wait that uses it. set() takes
// each registered mutex: never call it while holding one. Owners of a registered wait call
// stop_waking() before destroying it.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace mlpo::offload {

class PipelineError {
 public:
  // From now on a failure notifies `cv`'s waiters, after taking `mutex` once so that a waiter
  // between its predicate check and its sleep cannot miss it. Both must stay alive until
  // stop_waking(mutex).
  void wake_on_failure(std::mutex& mutex, std::condition_variable& cv) {
    std::lock_guard lock(mutex_);
    waits_.emplace_back(&mutex, &cv);
  }

  // Stops waking the waits of `mutex` (before it and its condition variable are destroyed):
  // once this returns, no set() touches them.
  void stop_waking(std::mutex& mutex) {
    std::lock_guard lock(mutex_);
    std::erase_if(waits_, [&](const auto& w) { return w.first == &mutex; });
  }

  void set(const std::string& message) {
    // mutex_ is held throughout, so stop_waking() cannot return while a wait is being woken.
    // Lock order: mutex_, then a wait's mutex (no wait calls into this while holding its own).
    std::lock_guard lock(mutex_);
    if (message_.empty()) message_ = message;
    failed_ = true;
    for (auto [mutex, cv] : waits_) {
      { std::lock_guard wait_lock(*mutex); }
      cv->notify_all();
    }
  }

  bool failed() const { return failed_.load(); }

  void rethrow() const {
    std::lock_guard lock(mutex_);
    if (!message_.empty()) throw Error(message_);
  }

 private:
  mutable std::mutex mutex_;
  std::string message_;
  std::atomic<bool> failed_{false};
  std::vector<std::pair<std::mutex*, std::condition_variable*>> waits_;
};

}  // namespace mlpo::offload
