#pragma once
// NcclCommunicator: collectives over GPU memory with NCCL, one GPU per rank. Compiled only
// where CUDA and NCCL are found (MLPO_HAVE_NCCL). The NCCL communicator is bootstrapped
// through a host communicator of the same job (MPI, or the single-process one for a world of
// one): rank 0 makes the NCCL unique id and broadcasts it. The rank's GPU is its local rank
// modulo the GPUs the process sees (launch one rank per GPU).
//
// Every span passed to the collectives points into device memory of that GPU. Each call is
// enqueued on the communicator's own stream and synchronised before it returns. Sums keep
// the rank-order tree of rank_order_sum.hpp: reduce-scatter is a grouped send/recv
// all-to-all of blocks followed by a kernel that adds them in that tree (bitwise the same as
// the CPU tree_sum), never ncclReduceScatter/ncclAllReduce, whose order depends on the
// algorithm NCCL picks for the topology. The maximum uses ncclAllReduce (exact in any order).

#include <memory>

#include "executor/comm/communicator.hpp"

namespace mlpo::comm {

class NcclCommunicator final : public Communicator {
 public:
  // Picks the GPU, starts NCCL over `bootstrap` (collective over every rank). Throws
  // mlpo::Error when no CUDA device is usable or NCCL fails to start.
  explicit NcclCommunicator(std::unique_ptr<Communicator> bootstrap);
  ~NcclCommunicator() override;

  const char* backend() const override { return "nccl"; }
  MemorySpace memory() const override { return MemorySpace::device; }
  // The host communicator NCCL was started through (for host-side collectives, e.g.
  // check_world_matches). Do not use it while an NCCL call runs on another thread.
  Communicator& host() { return *bootstrap_; }
  Communicator& host_side() override { return *bootstrap_; }
  int device() const;

  void barrier() override;
  [[noreturn]] void abort_job(const std::string& message) override;

 protected:
  void do_all_gather(const void* mine, void* all, std::span<const std::int64_t> counts,
                     ElementType type) override;
  void do_reduce_scatter_sum(const void* all, void* mine, std::span<const std::int64_t> counts,
                             ElementType type) override;
  void do_all_reduce_sum(void* data, std::int64_t count, ElementType type) override;
  void do_all_reduce_max(void* data, std::int64_t count, ElementType type) override;
  void do_broadcast(void* data, std::int64_t bytes, int root) override;

 private:
  struct State;
  std::unique_ptr<Communicator> bootstrap_;
  std::unique_ptr<State> state_;
};

}  // namespace mlpo::comm
