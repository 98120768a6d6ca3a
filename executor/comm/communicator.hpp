#pragma once
// Communicator: the collectives MLPO's data-parallel ranks use — all-gather, reduce-scatter
// (sum), all-reduce (sum, max), barrier, broadcast — over typed spans of float, double, bf16,
// int64 (and raw bytes for gather/broadcast). Backends: SingleProcessCommunicator (a world of
// one, no MPI), MpiCommunicator (host buffers) and NcclCommunicator (device buffers); memory()
// says which memory the spans must point into.
//
// Contract (all backends):
// - Every rank calls the same collectives in the same order with matching sizes; the calls
//   are blocking: when one returns, its output is complete and its inputs may be reused.
// - One thread at a time: a communicator is not thread-safe; calls that overlap in time abort
//   with a message. LayerExchange runs all its collectives on one worker thread for that.
// - Sums are deterministic: every backend adds the ranks' contributions in the fixed tree of
//   rank_order_sum.hpp, so the result bits depend on the data and the world size only —
//   never on message timing, the MPI library's algorithm choice or the network.
// - Errors: a failing collective throws mlpo::Error on the rank that saw it. A rank that
//   cannot go on must call abort_job (run_ranked does), which ends every rank of the job;
//   never let an exception unwind past a live multi-rank communicator, as its peers would
//   wait for it forever.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/bf16.hpp"

namespace mlpo {
struct ClusterShape;
}

namespace mlpo::comm {

enum class ElementType { f32, f64, bf16, i64, byte };
enum class MemorySpace { host, device };

template <class T>
inline constexpr bool kIsSummable = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                    std::is_same_v<T, bf16> || std::is_same_v<T, std::int64_t>;
template <class T>
inline constexpr bool kIsElement = kIsSummable<T> || std::is_same_v<T, std::byte>;

template <class T>
constexpr ElementType element_type_of() {
  static_assert(kIsElement<T>, "communicator elements are float, double, bf16, int64_t or std::byte");
  if constexpr (std::is_same_v<T, float>)
    return ElementType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return ElementType::f64;
  else if constexpr (std::is_same_v<T, bf16>)
    return ElementType::bf16;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return ElementType::i64;
  else
    return ElementType::byte;
}

std::size_t element_bytes(ElementType type);

// Where this process sits: rank among size, local rank among the local_size ranks of its
// node, and the node index among nodes (nodes numbered by their lowest world rank).
struct RankPlace {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node = 0;
  int nodes = 1;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual const char* backend() const = 0;  // "single", "mpi" or "nccl"
  virtual MemorySpace memory() const = 0;
  // The same ranks over host memory: this communicator when memory() is host; for a device
  // communicator, the host one it was bootstrapped through (NCCL: MPI, or the single-process
  // one for a world of one). For host-side collectives (checkpoints, start-up checks).
  virtual Communicator& host_side() { return *this; }

  const RankPlace& place() const { return place_; }
  int rank() const { return place_.rank; }
  int size() const { return place_.size; }
  int local_rank() const { return place_.local_rank; }
  int local_size() const { return place_.local_size; }
  int node() const { return place_.node; }
  int nodes() const { return place_.nodes; }

  // all = the ranks' `mine` concatenated in rank order; rank r contributes counts[r]
  // elements (counts.size() == size(), mine.size() == counts[rank()], all.size() == their
  // sum). `mine` may be the rank's own piece of `all` (in place).
  template <class T>
  void all_gather(std::span<const T> mine, std::span<T> all, std::span<const std::int64_t> counts) {
    check_counts(counts, mine.size(), all.size());
    do_all_gather(mine.data(), all.data(), counts, element_type_of<T>());
  }
  // Equal pieces: all.size() == size() * mine.size().
  template <class T>
  void all_gather(std::span<const T> mine, std::span<T> all) {
    const std::vector<std::int64_t> counts = equal_counts(mine.size());
    all_gather(mine, all, std::span<const std::int64_t>(counts));
  }

  // mine = rank-order tree sum over the ranks of their block rank() of `all`, where block r
  // holds counts[r] elements (blocks in rank order). bf16 is summed in fp32, rounded once.
  template <class T>
  void reduce_scatter_sum(std::span<const T> all, std::span<T> mine, std::span<const std::int64_t> counts) {
    static_assert(kIsSummable<T>, "sums are over float, double, bf16 or int64_t");
    check_counts(counts, mine.size(), all.size());
    do_reduce_scatter_sum(all.data(), mine.data(), counts, element_type_of<T>());
  }
  template <class T>
  void reduce_scatter_sum(std::span<const T> all, std::span<T> mine) {
    const std::vector<std::int64_t> counts = equal_counts(mine.size());
    reduce_scatter_sum(all, mine, std::span<const std::int64_t>(counts));
  }

  // data = rank-order tree sum of every rank's data (same bits on every rank).
  template <class T>
  void all_reduce_sum(std::span<T> data) {
    static_assert(kIsSummable<T>, "sums are over float, double, bf16 or int64_t");
    do_all_reduce_sum(data.data(), static_cast<std::int64_t>(data.size()), element_type_of<T>());
  }
  // data = elementwise maximum over the ranks (exact; any order gives the same result).
  template <class T>
  void all_reduce_max(std::span<T> data) {
    static_assert(kIsSummable<T>, "max is over float, double, bf16 or int64_t");
    do_all_reduce_max(data.data(), static_cast<std::int64_t>(data.size()), element_type_of<T>());
  }

  // data on every rank = data on `root`.
  template <class T>
  void broadcast(std::span<T> data, int root) {
    static_assert(kIsElement<T>, "broadcast elements are float, double, bf16, int64_t or std::byte");
    check_root(root);
    do_broadcast(data.data(), static_cast<std::int64_t>(data.size_bytes()), root);
  }

  // Returns when every rank has entered it.
  virtual void barrier() = 0;

  // Prints "rank N: <message>" on stderr and ends every rank of the job with exit status 2
  // (MPI_Abort for MPI and NCCL). Does not return.
  [[noreturn]] virtual void abort_job(const std::string& message) = 0;

 protected:
  explicit Communicator(const RankPlace& place) : place_(place) {}

  virtual void do_all_gather(const void* mine, void* all, std::span<const std::int64_t> counts,
                             ElementType type) = 0;
  virtual void do_reduce_scatter_sum(const void* all, void* mine, std::span<const std::int64_t> counts,
                                     ElementType type) = 0;
  virtual void do_all_reduce_sum(void* data, std::int64_t count, ElementType type) = 0;
  virtual void do_all_reduce_max(void* data, std::int64_t count, ElementType type) = 0;
  virtual void do_broadcast(void* data, std::int64_t bytes, int root) = 0;

  // Splits `count` elements into size() rank-order blocks differing by at most one element
  // (the split all_reduce_sum uses: reduce-scatter, then all-gather).
  std::vector<std::int64_t> near_equal_counts(std::int64_t count) const;

 private:
  std::vector<std::int64_t> equal_counts(std::size_t each) const;
  void check_counts(std::span<const std::int64_t> counts, std::size_t mine, std::size_t all) const;
  void check_root(int root) const;

  RankPlace place_;
};

// Runs `body` and returns its status; an exception escaping it ends the whole job through
// comm.abort_job(e.what()), so no peer waits on this rank forever.
int run_ranked(Communicator& comm, const std::function<int()>& body);

// Start-up check that the launched job is the one the plan was tuned for: planned
// nodes x ranks_per_node ranks against the launched size(), nodes() and ranks per node.
// Collective (every rank must call it); throws the same mlpo::Error on every rank, naming
// the launched and the planned shape and how to fix either.
void check_world_matches(Communicator& comm, const ClusterShape& planned);

}  // namespace mlpo::comm
