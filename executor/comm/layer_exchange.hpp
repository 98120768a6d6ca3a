#pragma once
// LayerExchange: the ZeRO-3 traffic of one rank — gather a layer's full weights from every
// rank's shard before the layer runs, and reduce-scatter a layer's gradients so each rank
// keeps the sum over ranks of its own piece — on one background thread, so that it overlaps
// compute. Operations run strictly in the order they were queued, on every rank alike (the
// same program queues the same sequence), which keeps the collectives matched across ranks
// and lets the communicator stay single-threaded. While operations are queued the caller
// must not use the communicator directly: call drain() first.
//
// Buffers belong to the caller and must stay alive and untouched until the operation's
// Pending::wait() returns (or drain()). They live in the communicator's memory() space.
//
// PrefetchedLayers walks a fixed layer sequence with two caller buffers: acquire() hands out
// the next layer's gathered weights and starts gathering the one after (one layer ahead);
// release() frees the buffer for reuse. Cost per layer: one all-gather of the layer's bf16
// weights ((P-1)/P of it in and out per rank); memory: two buffers of the largest layer.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "core/bf16.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/zero_partition.hpp"

namespace mlpo::comm {

// A queued exchange; wait() returns when it is complete and rethrows its error.
class Pending {
 public:
  Pending() = default;
  explicit Pending(std::future<void> done) : done_(std::move(done)) {}
  bool valid() const { return done_.valid(); }
  void wait() {
    if (done_.valid()) done_.get();
  }

 private:
  std::future<void> done_;
};

// What a rank's exchange cost since its LayerExchange started, for the run log: the CPU
// time its thread spent in operations (MPI's copies, the reduce-scatter's sums, its tests and
// wake-ups: on the CPU backend taken from the compute's cores) and the time the caller waited
// for gathered weights (PrefetchedLayers::acquire: gathers that compute did not hide).
struct ExchangeTotals {
  double thread_cpu_s = 0;
  double gather_wait_s = 0;
};

class LayerExchange {
 public:
  // `comm` and `partition` (of comm.size() ranks, this rank comm.rank()) must outlive this.
  LayerExchange(Communicator& comm, const ZeroPartition& partition);
  // Finishes the queued operations (their errors are dropped: wait() on them to see them).
  ~LayerExchange();
  LayerExchange(const LayerExchange&) = delete;
  LayerExchange& operator=(const LayerExchange&) = delete;

  const ZeroPartition& partition() const { return partition_; }

  // full (range.size() elements) = the weights of `range`, each rank contributing its piece
  // from `shard` (this rank's whole shard, partition.mine().elements elements).
  template <class T>
  Pending gather(ParamRange range, std::span<const T> shard, std::span<T> full) {
    return enqueue_on_piece(range, shard, full.size(),
                            [this, full](std::span<const T> piece, std::span<const std::int64_t> counts) {
                              comm_.all_gather(piece, full, counts);
                            });
  }

  // This rank's piece of `range` in `shard` (its whole gradient shard) = the rank-order sum
  // over ranks of their `full` gradients (range.size() elements) of that piece. bf16 is
  // summed in fp32 and rounded once.
  template <class T>
  Pending reduce_scatter(ParamRange range, std::span<const T> full, std::span<T> shard) {
    return enqueue_on_piece(range, shard, full.size(),
                            [this, full](std::span<T> piece, std::span<const std::int64_t> counts) {
                              comm_.reduce_scatter_sum(full, piece, counts);
                            });
  }

  // Returns when every queued operation has finished; rethrows the first error any of them
  // raised since the last drain().
  void drain();

  // Totals since construction (operations still running count once they finish).
  ExchangeTotals totals() const;
  // PrefetchedLayers reports the seconds its acquire() waited for a gather.
  void add_gather_wait(double seconds);

 private:
  Pending enqueue(std::function<void()> op);
  // Queues op(piece, counts) for `range`: piece = this rank's piece of it in `shard`, counts =
  // every rank's element count of it.
  template <class T, class Op>
  Pending enqueue_on_piece(ParamRange range, std::span<T> shard, std::size_t full_size, Op op) {
    check_shard(shard.size(), full_size, range);
    return enqueue([this, range, shard, op] {
      const ParamRange piece = partition_.my_piece(range);
      const std::vector<std::int64_t> counts = partition_.counts(range);
      op(shard.subspan(offset_in_shard(piece), static_cast<std::size_t>(piece.size())),
         std::span<const std::int64_t>(counts));
    });
  }
  void check_shard(std::size_t shard, std::size_t full, ParamRange range) const;
  std::size_t offset_in_shard(ParamRange piece) const {
    return static_cast<std::size_t>(piece.begin - partition_.mine().global_begin);
  }
  void run();

  Communicator& comm_;
  const ZeroPartition& partition_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::pair<std::function<void()>, std::promise<void>>> queue_;
  std::exception_ptr first_error_;
  bool busy_ = false;
  bool stopping_ = false;
  ExchangeTotals totals_;
  std::thread worker_;  // last: starts after everything it uses
};

class PrefetchedLayers {
 public:
  // Starts gathering sequence[0] into buffers[0]. Each buffer holds the largest layer of the
  // sequence; `shard` is this rank's weight shard, read when each gather runs (so updated
  // weights are seen by the next walk). All must outlive this.
  PrefetchedLayers(LayerExchange& exchange, std::vector<ParamRange> sequence, std::span<const bf16> shard,
                   std::span<bf16> buffer_a, std::span<bf16> buffer_b);
  // Waits for what is still in flight.
  ~PrefetchedLayers();
  PrefetchedLayers(const PrefetchedLayers&) = delete;
  PrefetchedLayers& operator=(const PrefetchedLayers&) = delete;

  // The next layer of the sequence, fully gathered; starts gathering the one after into the
  // other buffer. The previous layer must have been released. Valid until release().
  std::span<const bf16> acquire();
  // Done with the layer acquire() returned last.
  void release();
  // Layers of the sequence handed out so far.
  std::size_t position() const { return next_; }

 private:
  void start(std::size_t index);

  LayerExchange& exchange_;
  std::vector<ParamRange> sequence_;
  std::span<const bf16> shard_;
  std::span<bf16> buffers_[2];
  Pending pending_[2];
  std::size_t next_ = 0;
  bool holding_ = false;
};

}  // namespace mlpo::comm
