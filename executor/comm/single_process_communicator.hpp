#pragma once
// SingleProcessCommunicator: a world of one rank on one node, with no MPI. Every collective
// is a copy (or nothing): the sum over one contribution is that contribution, bit for bit
// (bf16 widened to fp32 and rounded back is exact). CPU-only single runs use it so they need
// no launcher and no MPI library.

#include "executor/comm/communicator.hpp"

namespace mlpo::comm {

class SingleProcessCommunicator final : public Communicator {
 public:
  SingleProcessCommunicator();

  const char* backend() const override { return "single"; }
  MemorySpace memory() const override { return MemorySpace::host; }
  void barrier() override {}
  // Prints "rank 0: <message>" and exits the process with status 2.
  [[noreturn]] void abort_job(const std::string& message) override;

 protected:
  void do_all_gather(const void* mine, void* all, std::span<const std::int64_t> counts,
                     ElementType type) override;
  void do_reduce_scatter_sum(const void* all, void* mine, std::span<const std::int64_t> counts,
                             ElementType type) override;
  void do_all_reduce_sum(void*, std::int64_t, ElementType) override {}
  void do_all_reduce_max(void*, std::int64_t, ElementType) override {}
  void do_broadcast(void*, std::int64_t, int) override {}
};

}  // namespace mlpo::comm
