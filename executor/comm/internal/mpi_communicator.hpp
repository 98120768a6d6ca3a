#pragma once
// MpiCommunicator: the communicator of a job started by mpirun or srun, over host buffers.
// Owns MPI for this process: the constructor calls MPI_Init_thread (MPI_THREAD_SERIALIZED:
// one thread at a time, any thread), the destructor MPI_Finalize. MPI allows one
// initialisation per process, so at most one MpiCommunicator exists in a process's life.
// All of MPI's global state stays inside mpi_communicator.cpp; this header has no MPI types.
//
// Collectives: errors come back as return codes (MPI_ERRORS_RETURN) and are thrown as
// mlpo::Error. Sums never use MPI's reductions (their order is implementation-defined):
// reduce-scatter is an all-to-all of blocks (rank q sends its block r to rank r) followed by
// the rank-order tree sum; all-reduce-sum is that reduce-scatter over near-equal blocks then
// an all-gather, in place. Bytes moved per rank are (P-1)/P of the buffer for reduce-scatter
// and all-gather — what a ring moves — in P-1 messages each way; the cost of determinism is
// a staging buffer of (P-1) blocks and a sum that starts once all blocks have arrived.
// Node and local rank come from MPI itself (shared-memory groups), checked against the
// launcher's environment.

#include <memory>

#include "executor/comm/communicator.hpp"
#include "executor/comm/launch_env.hpp"

namespace mlpo::comm {

class MpiCommunicator final : public Communicator {
 public:
  // Starts MPI. Throws mlpo::Error when MPI was started before in this process, gives less
  // than MPI_THREAD_SERIALIZED, or disagrees with the launcher's environment `env` about
  // the world size (e.g. a Slurm batch script running the program without srun).
  explicit MpiCommunicator(const LaunchEnv& env);
  ~MpiCommunicator() override;

  const char* backend() const override { return "mpi"; }
  MemorySpace memory() const override { return MemorySpace::host; }
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
  struct Started;
  explicit MpiCommunicator(Started started);
  static Started start(const LaunchEnv& env);

  std::unique_ptr<State> state_;
};

}  // namespace mlpo::comm
