#pragma once
// Streams and events around the compute stream of a CudaBackend, for the two transfers that
// must overlap with compute (DESIGN.md, "Overlap"; ZeRO-Infinity's parameter offload):
//
//  * LayerStreamer — parameter offload. All layers' weights live in pinned host memory (one
//    flat buffer in the model's layout order, which the optimizer's update writes new bf16
//    weights into). The GPU holds `resident` slots, each as large as the largest layer.
//    acquire(l, direction) makes layer l's weights resident (fetching them on a copy stream if
//    needed), makes the compute stream wait for that fetch with an event, and starts fetching
//    the next resident-1 layers in `direction` (+1 forward, -1 backward) into free slots, so
//    the copy of layer l+1 overlaps the compute of layer l. release(l) records an event on the
//    compute stream; a slot is refilled only after that event, so a fetch never overwrites
//    weights a queued kernel still reads. Bounded: at most `resident` layers on the GPU.
//  * GradientCopier — gradient hand-over. copy_to_host(src, dst) enqueues a device-to-host
//    copy on its own stream after the work enqueued so far on the compute stream (an event),
//    so a layer's gradient travels while backward computes the next layer.
//
// Neither blocks the host except where documented. Host memory given to them must be pinned
// (PinnedBuffer) for the copies to be asynchronous. Not thread-safe (one driver thread, like
// the backend). The CPU backend needs neither: its weights and gradients are host memory.

#include <cstdint>
#include <deque>
#include <vector>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/device.hpp"

namespace mlpo {

// Elements [offset, offset + count) of the flat weight buffer that form one layer.
struct LayerSpan {
  std::int64_t offset = 0, count = 0;
};

class LayerStreamer {
 public:
  // `layers` must not overlap; `resident` >= 1 slots (2 is enough for full overlap when a
  // layer's compute takes longer than its copy). Allocates resident x max layer on the GPU
  // (mlpo::Error naming the bytes when that does not fit) and the pinned host copy.
  LayerStreamer(CudaBackend& backend, DType storage, std::vector<LayerSpan> layers, int resident);

  int layers() const { return static_cast<int>(layers_.size()); }
  int resident() const { return static_cast<int>(slots_.size()); }

  // The pinned host weights, layout order, `host_elements()` elements of the storage type.
  // After writing into them (the update phase), call weights_changed().
  void* host_weights() const { return host_.data(); }
  std::int64_t host_elements() const { return host_elements_; }
  // Forgets every resident copy, so the next acquire fetches the new weights. Waits for
  // in-flight fetches first (they read the host buffer).
  void weights_changed();

  // Layer l's weights on the GPU, [count] of the storage type, valid until release(l). Work
  // enqueued on the compute stream after this call sees the fetched values.
  Tensor acquire(int layer, int direction);
  void release(int layer);

  // Fetches that had to wait for a slot (no prefetch had started them): a measure of stalls.
  std::int64_t demand_fetches() const { return demand_fetches_; }
  std::int64_t fetches() const { return fetches_; }

 private:
  struct Slot {
    DeviceBuffer buffer;
    int layer = -1;
    bool in_use = false;
    std::int64_t last_use = 0;
    gpu::Event fetched, released;
  };
  int slot_of(int layer) const;
  int free_slot(int avoid_layer, int direction) const;
  void fetch(int layer, int slot);

  CudaBackend& backend_;
  DType storage_;
  std::vector<LayerSpan> layers_;
  std::int64_t host_elements_ = 0;
  gpu::PinnedBuffer host_;
  std::deque<Slot> slots_;  // deque: Slots hold events, which do not move
  gpu::Stream copy_stream_;
  std::int64_t clock_ = 0, fetches_ = 0, demand_fetches_ = 0;
};

class GradientCopier {
 public:
  explicit GradientCopier(CudaBackend& backend) : backend_(backend) {}
  // Copies src (device) to dst (pinned host, src.bytes() bytes) once the compute stream has
  // finished the work enqueued before this call. Returns at once.
  void copy_to_host(Tensor src, void* dst);
  // Makes the compute stream wait (without blocking the host) until every copy enqueued so far
  // has read its source: call before enqueuing work that overwrites those device buffers.
  void order_compute_after_copies();
  // Blocks the host until every copy enqueued so far has landed in host memory.
  void wait();

 private:
  CudaBackend& backend_;
  gpu::Stream stream_;
  gpu::Event ready_, copied_;
};

}  // namespace mlpo
