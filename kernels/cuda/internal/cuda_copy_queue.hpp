#pragma once
// CudaCopyQueue: CopyQueue (kernels/backend.hpp) of a CudaBackend — a non-blocking stream of
// its own beside the backend's compute stream, for the transfers that must overlap compute
// (the technique's overlap idea, docs/architecture.md; ZeRO-Infinity's parameter offload):
//
//   * weight fetches of parameter offload (HostStreamedWeights): the next part's bf16 weights
//     host -> device while the current part computes;
//   * the gradient hand-over (compute::GradientHandover): each range's bf16 gradient device ->
//     host while backward computes the next layer;
//   * the updated bf16 weights host -> device, subgroup by subgroup, while the CPU updates the
//     next subgroups (resident weights).
//
// Each copy waits for an event recorded on the compute stream at the call (so it sees, or may
// overwrite, everything the ops enqueued before it touched); order_compute_after_copies()
// records an event on the copy stream and makes the compute stream wait for it. Two events are
// re-recorded for every call: cudaStreamWaitEvent uses the event's state at the time of the
// wait, so reusing them is safe. Nothing here blocks the host except wait(). Host memory should
// be pinned (CudaBackend::allocate_host); pageable memory still works, without overlap.

#include "kernels/backend.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/internal/id_ranges.hpp"

namespace mlpo {

class CudaCopyQueue final : public CopyQueue {
 public:
  // `compute`: the stream whose ops the copies are ordered against (the backend's); `ids`: the
  // backend's record of uploaded ids, which copies to the device invalidate (may be null).
  explicit CudaCopyQueue(cudaStream_t compute, gpu::IdRanges* ids = nullptr) : compute_(compute), ids_(ids) {}
  ~CudaCopyQueue() override;  // waits for the copies in flight

  void to_device(Tensor dst, const void* src) override;
  void to_host(void* dst, Tensor src) override;
  void order_compute_after_copies() override;
  void wait() override;

  cudaStream_t stream() const { return stream_.get(); }

 private:
  void after_compute();

  cudaStream_t compute_;
  gpu::IdRanges* ids_;
  gpu::Stream stream_;
  gpu::Event compute_mark_, copies_mark_;
};

}  // namespace mlpo
