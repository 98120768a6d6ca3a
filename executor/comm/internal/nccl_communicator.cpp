#include "executor/comm/internal/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "executor/comm/internal/nccl_tree_sum.hpp"
#include "kernels/cuda/device.hpp"

namespace mlpo::comm {

namespace {

void check_cuda(cudaError_t rc, const char* what) {
  gpu::check(rc, std::string("the NCCL communicator's ") + what);
}

[[noreturn]] void nccl_failed(ncclResult_t rc, const std::string& what) {
  throw gpu::GpuError("NCCL", static_cast<int>(rc), false,
                      "NCCL error in " + what + ": " + ncclGetErrorString(rc) +
                          " (a peer rank may have died; see its message above)");
}

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) nccl_failed(rc, what);
}

ncclDataType_t nccl_type(ElementType type) {
  switch (type) {
    case ElementType::f32:
      return ncclFloat32;
    case ElementType::f64:
      return ncclFloat64;
    case ElementType::bf16:
      return ncclBfloat16;
    case ElementType::i64:
      return ncclInt64;
    case ElementType::byte:
      return ncclUint8;
  }
  MLPO_CHECK(false, "unknown element type");
}

TreeSumType tree_sum_type(ElementType type) {
  switch (type) {
    case ElementType::f32:
      return TreeSumType::f32;
    case ElementType::f64:
      return TreeSumType::f64;
    case ElementType::bf16:
      return TreeSumType::bf16;
    case ElementType::i64:
      return TreeSumType::i64;
    case ElementType::byte:
      break;
  }
  MLPO_CHECK(false, "bytes are not summed");
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBytes = std::unique_ptr<void, DeviceFree>;

DeviceBytes device_alloc(std::size_t bytes) {
  void* p = nullptr;
  gpu::check_allocation(cudaMalloc(&p, bytes), bytes, "the NCCL communicator's staging buffer");
  return DeviceBytes(p);
}

int pick_device(int local_rank) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    throw Error(std::string("NCCL communicator: no usable CUDA device (") +
                (rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices") +
                "); use the MPI communicator on CPU-only machines");
  const int device = local_rank % count;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

}  // namespace

struct NcclCommunicator::State {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::mutex in_use;
  DeviceBytes staging;  // reduce-scatter: the peers' blocks
  std::size_t staging_bytes = 0;
  DeviceBytes part_table;  // device array of block pointers for the tree-sum kernel
  std::size_t part_table_entries = 0;

  ~State() {
    if (comm) ncclCommDestroy(comm);
    if (stream) cudaStreamDestroy(stream);
  }
  void* staging_for(std::size_t bytes) {
    if (bytes > staging_bytes) {
      staging.reset();
      staging = device_alloc(bytes);
      staging_bytes = bytes;
    }
    return staging.get();
  }
  // Waits for the collectives on the stream. Not cudaStreamSynchronize: a collective whose peer
  // died never completes, so the wait polls the stream and NCCL's asynchronous error, and on an
  // error aborts the communicator (which ends its kernels) and throws.
  void finish() {
    for (int polls = 0;; ++polls) {
      const cudaError_t done = cudaStreamQuery(stream);
      if (done == cudaSuccess) return;
      if (done != cudaErrorNotReady) check_cuda(done, "collective (stream query)");
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress) {
        ncclCommAbort(comm);
        comm = nullptr;
        nccl_failed(async, "a collective (reported asynchronously; the communicator was aborted)");
      }
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> bootstrap)
    : Communicator(bootstrap->place()), bootstrap_(std::move(bootstrap)), state_(std::make_unique<State>()) {
  MLPO_CHECK(bootstrap_->memory() == MemorySpace::host, "NCCL is bootstrapped through a host communicator");
  state_->device = pick_device(local_rank());
  check_cuda(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  bootstrap_->broadcast(std::span<std::byte>(reinterpret_cast<std::byte*>(&id), sizeof id), 0);
  check_nccl(ncclCommInitRank(&state_->comm, size(), id, rank()), "ncclCommInitRank");
}

NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::device() const { return state_->device; }

#define MLPO_ONE_CALLER(state)                                                                            \
  std::unique_lock<std::mutex> one_caller((state).in_use, std::try_to_lock);                              \
  MLPO_CHECK(one_caller.owns_lock(), "two threads used one communicator at once (see communicator.hpp)"); \
  check_cuda(cudaSetDevice((state).device), "cudaSetDevice")

void NcclCommunicator::barrier() {
  {
    MLPO_ONE_CALLER(*state_);
    state_->finish();
  }
  bootstrap_->barrier();
}

void NcclCommunicator::abort_job(const std::string& message) {
  if (state_->comm) ncclCommAbort(state_->comm);
  state_->comm = nullptr;
  bootstrap_->abort_job(message);
  std::abort();  // not reached: the bootstrap's abort_job ends the process
}

void NcclCommunicator::do_all_gather(const void* mine, void* all, std::span<const std::int64_t> counts,
                                     ElementType type) {
  MLPO_ONE_CALLER(*state_);
  const std::size_t esize = element_bytes(type);
  auto* out = static_cast<std::byte*>(all);
  std::vector<std::size_t> offsets(static_cast<std::size_t>(size()) + 1, 0);
  for (int q = 0; q < size(); ++q)
    offsets[static_cast<std::size_t>(q) + 1] =
        offsets[static_cast<std::size_t>(q)] +
        static_cast<std::size_t>(counts[static_cast<std::size_t>(q)]) * esize;
  std::byte* my_piece = out + offsets[static_cast<std::size_t>(rank())];
  const std::size_t my_bytes = static_cast<std::size_t>(counts[static_cast<std::size_t>(rank())]) * esize;
  if (my_piece != mine && my_bytes > 0)
    check_cuda(cudaMemcpyAsync(my_piece, mine, my_bytes, cudaMemcpyDeviceToDevice, state_->stream),
               "cudaMemcpyAsync");
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    const std::size_t bytes = static_cast<std::size_t>(counts[static_cast<std::size_t>(q)]) * esize;
    if (bytes > 0)
      check_nccl(ncclRecv(out + offsets[static_cast<std::size_t>(q)], bytes, ncclUint8, q, state_->comm,
                          state_->stream),
                 "ncclRecv");
    if (my_bytes > 0)
      check_nccl(ncclSend(my_piece, my_bytes, ncclUint8, q, state_->comm, state_->stream), "ncclSend");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  state_->finish();
}

void NcclCommunicator::do_reduce_scatter_sum(const void* all, void* mine,
                                             std::span<const std::int64_t> counts, ElementType type) {
  MLPO_ONE_CALLER(*state_);
  const std::size_t esize = element_bytes(type);
  const auto* in = static_cast<const std::byte*>(all);
  const std::size_t my_bytes = static_cast<std::size_t>(counts[static_cast<std::size_t>(rank())]) * esize;
  auto* staging =
      static_cast<std::byte*>(state_->staging_for(my_bytes * static_cast<std::size_t>(size() - 1) + 1));
  std::vector<const void*> parts(static_cast<std::size_t>(size()));
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  std::size_t offset = 0;
  for (int q = 0, slot = 0; q < size(); ++q) {
    const std::size_t bytes = static_cast<std::size_t>(counts[static_cast<std::size_t>(q)]) * esize;
    if (q == rank()) {
      parts[static_cast<std::size_t>(q)] = in + offset;
    } else {
      std::byte* block = staging + my_bytes * static_cast<std::size_t>(slot++);
      parts[static_cast<std::size_t>(q)] = block;
      if (my_bytes > 0)
        check_nccl(ncclRecv(block, my_bytes, ncclUint8, q, state_->comm, state_->stream), "ncclRecv");
      if (bytes > 0)
        check_nccl(ncclSend(in + offset, bytes, ncclUint8, q, state_->comm, state_->stream), "ncclSend");
    }
    offset += bytes;
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  if (state_->part_table_entries < parts.size()) {
    state_->part_table = device_alloc(parts.size() * sizeof(void*));
    state_->part_table_entries = parts.size();
  }
  check_cuda(cudaMemcpyAsync(state_->part_table.get(), parts.data(), parts.size() * sizeof(void*),
                             cudaMemcpyHostToDevice, state_->stream),
             "cudaMemcpyAsync");
  check_cuda(launch_tree_sum(tree_sum_type(type), static_cast<const void* const*>(state_->part_table.get()),
                             size(), mine, counts[static_cast<std::size_t>(rank())], state_->stream),
             "tree-sum kernel launch");
  state_->finish();  // also keeps `parts` alive until the copy above has run
}

void NcclCommunicator::do_all_reduce_sum(void* data, std::int64_t count, ElementType type) {
  // In place, as in MpiCommunicator: reduce-scatter our block onto itself, then gather.
  const std::vector<std::int64_t> counts = near_equal_counts(count);
  std::int64_t my_offset = 0;
  for (int q = 0; q < rank(); ++q) my_offset += counts[static_cast<std::size_t>(q)];
  std::byte* mine =
      static_cast<std::byte*>(data) + my_offset * static_cast<std::int64_t>(element_bytes(type));
  do_reduce_scatter_sum(data, mine, counts, type);
  do_all_gather(mine, data, counts, type);
}

void NcclCommunicator::do_all_reduce_max(void* data, std::int64_t count, ElementType type) {
  MLPO_ONE_CALLER(*state_);
  MLPO_CHECK(type != ElementType::byte, "max is not defined on bytes");
  check_nccl(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(type), ncclMax,
                           state_->comm, state_->stream),
             "ncclAllReduce");
  state_->finish();
}

void NcclCommunicator::do_broadcast(void* data, std::int64_t bytes, int root) {
  MLPO_ONE_CALLER(*state_);
  check_nccl(ncclBroadcast(data, data, static_cast<std::size_t>(bytes), ncclUint8, root, state_->comm,
                           state_->stream),
             "ncclBroadcast");
  state_->finish();
}

}  // namespace mlpo::comm
