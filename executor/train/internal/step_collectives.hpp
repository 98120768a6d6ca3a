#pragma once
// StepCollectives: the small collectives of a training step over the job's communicator — the
// micro-batch losses (all_gather), the gradient-norm chunk sums (all_reduce_sum) and the step's
// timings and counts (all_reduce_max, all_reduce_sum). A few kB per step; the gradients and
// weights themselves move through the LayerExchange (GradientHandover, GatheredWeights).
//
// A communicator of host buffers (one process, MPI) gets the host spans directly. One of GPU
// buffers (NCCL) gets them staged through device memory of the compute backend, so the step's
// reductions really run through it: the rank's values are copied in, reduced in place, and
// copied back out; the staging buffer grows to the largest call and is kept (at least 4 kB).
// Results are the communicator's either way (bitwise: staging only copies).
//
// Collective: every rank makes the same calls with the same sizes, in the same order.

#include <cstddef>
#include <span>

#include "executor/comm/communicator.hpp"
#include "kernels/backend.hpp"

namespace mlpo::train {

class StepCollectives {
 public:
  // `comm` and `backend` must outlive this object.
  StepCollectives(comm::Communicator& comm, Backend& backend) : comm_(comm), backend_(backend) {}

  // all[r * mine.size() ..] := rank r's `mine`, on every rank.
  template <class T>
  void all_gather(std::span<const T> mine, std::span<T> all) {
    if (comm_.memory() == comm::MemorySpace::host) return comm_.all_gather(mine, all);
    T* d_all = static_cast<T*>(staging(all.size_bytes()));
    T* d_mine = d_all + comm_.rank() * mine.size();  // in place: the rank's own piece
    backend_.copy_from_host(bytes_view(d_mine, mine.size_bytes()), mine.data());
    comm_.all_gather(std::span<const T>(d_mine, mine.size()), std::span<T>(d_all, all.size()));
    backend_.copy_to_host(all.data(), bytes_view(d_all, all.size_bytes()));
  }
  // data := the element-wise sum over the ranks, on every rank.
  template <class T>
  void all_reduce_sum(std::span<T> data) {
    all_reduce(data, [this](std::span<T> d) { comm_.all_reduce_sum(d); });
  }
  // data := the element-wise maximum over the ranks, on every rank.
  template <class T>
  void all_reduce_max(std::span<T> data) {
    all_reduce(data, [this](std::span<T> d) { comm_.all_reduce_max(d); });
  }

 private:
  // Runs `reduce` in place on `data`, staged through device memory when the communicator
  // needs it there.
  template <class T, class Reduce>
  void all_reduce(std::span<T> data, Reduce reduce) {
    if (comm_.memory() == comm::MemorySpace::host) return reduce(data);
    T* d = stage_in(data);
    reduce(std::span<T>(d, data.size()));
    backend_.copy_to_host(data.data(), bytes_view(d, data.size_bytes()));
  }
  // Every staged element type is a multiple of 4 bytes wide: viewed as i32 words for copies.
  static Tensor bytes_view(void* p, std::size_t bytes);
  void* staging(std::size_t bytes);
  template <class T>
  T* stage_in(std::span<T> data) {
    T* d = static_cast<T*>(staging(data.size_bytes()));
    backend_.copy_from_host(bytes_view(d, data.size_bytes()), data.data());
    return d;
  }

  comm::Communicator& comm_;
  Backend& backend_;
  DeviceBuffer buffer_;
};

}  // namespace mlpo::train
