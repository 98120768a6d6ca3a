#include "executor/comm/layer_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <string>

#include "core/error.hpp"

namespace mlpo::comm {

namespace {

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

LayerExchange::LayerExchange(Communicator& comm, const ZeroPartition& partition)
    : comm_(comm), partition_(partition), worker_([this] { run(); }) {
  MLPO_CHECK(partition.ranks() == comm.size() && partition.rank() == comm.rank(),
             "partition of rank " + std::to_string(partition.rank()) + "/" +
                 std::to_string(partition.ranks()) + " for communicator rank " + std::to_string(comm.rank()) +
                 "/" + std::to_string(comm.size()));
}

LayerExchange::~LayerExchange() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void LayerExchange::check_shard(std::size_t shard, std::size_t full, ParamRange range) const {
  MLPO_CHECK(shard == static_cast<std::size_t>(partition_.mine().elements),
             "shard span of " + std::to_string(shard) + " elements, rank owns " +
                 std::to_string(partition_.mine().elements));
  MLPO_CHECK(
      full == static_cast<std::size_t>(range.size()),
      "layer span of " + std::to_string(full) + " elements for a range of " + std::to_string(range.size()));
}

Pending LayerExchange::enqueue(std::function<void()> op) {
  std::promise<void> done;
  Pending pending(done.get_future());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MLPO_CHECK(!stopping_, "operation queued on a stopping LayerExchange");
    queue_.emplace_back(std::move(op), std::move(done));
  }
  wake_.notify_one();
  return pending;
}

void LayerExchange::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
}

void LayerExchange::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    auto [op, done] = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    const double cpu0 = thread_cpu_seconds();
    try {
      op();
    } catch (...) {
      error = std::current_exception();
    }
    const double cpu_s = thread_cpu_seconds() - cpu0;
    lock.lock();
    busy_ = false;
    totals_.thread_cpu_s += cpu_s;
    if (error) {
      if (!first_error_) first_error_ = error;
      done.set_exception(error);
    } else {
      done.set_value();
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

ExchangeTotals LayerExchange::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return totals_;
}

void LayerExchange::add_gather_wait(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  totals_.gather_wait_s += seconds;
}

PrefetchedLayers::PrefetchedLayers(LayerExchange& exchange, std::vector<ParamRange> sequence,
                                   std::span<const bf16> shard, std::span<bf16> buffer_a,
                                   std::span<bf16> buffer_b)
    : exchange_(exchange), sequence_(std::move(sequence)), shard_(shard), buffers_{buffer_a, buffer_b} {
  std::int64_t largest = 0;
  for (const ParamRange& r : sequence_) largest = std::max(largest, r.size());
  MLPO_CHECK(buffer_a.size() >= static_cast<std::size_t>(largest) &&
                 buffer_b.size() >= static_cast<std::size_t>(largest),
             "layer buffers of " + std::to_string(buffer_a.size()) + " and " +
                 std::to_string(buffer_b.size()) + " elements for a largest layer of " +
                 std::to_string(largest));
  if (!sequence_.empty()) start(0);
}

PrefetchedLayers::~PrefetchedLayers() {
  // A gather still in flight writes into a caller buffer: wait for it, keep its error for
  // drain() (LayerExchange remembers it).
  for (Pending& p : pending_) {
    try {
      p.wait();
    } catch (...) {}
  }
}

void PrefetchedLayers::start(std::size_t index) {
  const ParamRange range = sequence_[index];
  std::span<bf16> full = buffers_[index % 2].first(static_cast<std::size_t>(range.size()));
  pending_[index % 2] = exchange_.gather<bf16>(range, shard_, full);
}

std::span<const bf16> PrefetchedLayers::acquire() {
  MLPO_CHECK(!holding_, "acquire() before release() of the previous layer");
  MLPO_CHECK(next_ < sequence_.size(),
             "acquire() past the end of a sequence of " + std::to_string(sequence_.size()) + " layers");
  const std::size_t index = next_++;
  const auto t0 = std::chrono::steady_clock::now();
  pending_[index % 2].wait();
  exchange_.add_gather_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (index + 1 < sequence_.size()) start(index + 1);
  holding_ = true;
  return buffers_[index % 2].first(static_cast<std::size_t>(sequence_[index].size()));
}

void PrefetchedLayers::release() {
  MLPO_CHECK(holding_, "release() without a layer acquired");
  holding_ = false;
}

}  // namespace mlpo::comm
