#include "kernels/cuda/layer_streamer.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo {

LayerStreamer::LayerStreamer(CudaBackend& backend, DType storage, std::vector<LayerSpan> layers, int resident)
    : backend_(backend), storage_(storage), layers_(std::move(layers)) {
  if (resident < 1) throw Error("parameter offload: resident layers must be at least 1, got " + std::to_string(resident));
  MLPO_CHECK(!layers_.empty(), "LayerStreamer needs at least one layer");
  std::int64_t largest = 0;
  for (const LayerSpan& l : layers_) {
    MLPO_CHECK(l.offset >= 0 && l.count > 0, "LayerStreamer: empty or negative layer span");
    largest = std::max(largest, l.count);
    host_elements_ = std::max(host_elements_, l.offset + l.count);
  }
  host_ = gpu::PinnedBuffer(static_cast<std::size_t>(host_elements_) * dtype_size(storage));
  const auto count = std::min<std::int64_t>(resident, static_cast<std::int64_t>(layers_.size()));
  for (std::int64_t i = 0; i < count; ++i) slots_.emplace_back().buffer = backend_.allocate(storage, largest);
}

int LayerStreamer::slot_of(int layer) const {
  for (std::size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].layer == layer) return static_cast<int>(s);
  return -1;
}

// A slot not in use: an empty one first, else the one whose layer is needed last in the
// current direction (layers behind us are needed last), else the least recently used.
int LayerStreamer::free_slot(int avoid_layer, int direction) const {
  int best = -1;
  std::int64_t best_score = std::numeric_limits<std::int64_t>::min();
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    if (slot.in_use || slot.layer == avoid_layer) continue;
    if (slot.layer < 0) return static_cast<int>(s);
    const std::int64_t ahead = static_cast<std::int64_t>(slot.layer - avoid_layer) * direction;
    const std::int64_t score = ahead < 0 ? (std::int64_t{1} << 40) - slot.last_use : -ahead;
    if (score > best_score) {
      best_score = score;
      best = static_cast<int>(s);
    }
  }
  return best;
}

void LayerStreamer::fetch(int layer, int slot) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  const LayerSpan& span = layers_[static_cast<std::size_t>(layer)];
  // The previous occupant may still be read by queued kernels: wait for its release (waiting
  // on a never-recorded event returns at once).
  s.released.wait_on(copy_stream_.get());
  const std::size_t bytes = static_cast<std::size_t>(span.count) * dtype_size(storage_);
  const char* src = static_cast<const char*>(host_.data()) + static_cast<std::size_t>(span.offset) * dtype_size(storage_);
  gpu::check(cudaMemcpyAsync(s.buffer.data(), src, bytes, cudaMemcpyHostToDevice, copy_stream_.get()),
             "parameter fetch (host to device)");
  s.fetched.record(copy_stream_.get());
  s.layer = layer;
  ++fetches_;
}

Tensor LayerStreamer::acquire(int layer, int direction) {
  MLPO_CHECK(layer >= 0 && layer < layers(), "LayerStreamer::acquire: no layer " + std::to_string(layer));
  MLPO_CHECK(direction == 1 || direction == -1, "LayerStreamer::acquire: direction is +1 or -1");
  int slot = slot_of(layer);
  if (slot < 0) {
    slot = free_slot(layer, direction);
    if (slot < 0)
      throw Error("parameter offload: all " + std::to_string(resident()) + " resident layer slots are acquired; release a "
                  "layer before acquiring layer " + std::to_string(layer) + " or raise the resident layer count");
    fetch(layer, slot);
    ++demand_fetches_;
  }
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.in_use = true;
  s.last_use = ++clock_;
  s.fetched.wait_on(backend_.compute_stream());

  // Prefetch the next layers in this direction into slots nobody uses.
  for (int ahead = 1; ahead < resident(); ++ahead) {
    const int next = layer + ahead * direction;
    if (next < 0 || next >= layers()) break;
    if (slot_of(next) >= 0) continue;
    const int target = free_slot(next, direction);
    if (target < 0) break;
    const int occupant = slots_[static_cast<std::size_t>(target)].layer;
    // Do not evict a layer that is needed before `next` in this direction.
    if (occupant >= 0 && (occupant - layer) * direction > 0 && (occupant - layer) * direction < ahead) break;
    fetch(next, target);
  }
  return Tensor(s.buffer.data(), storage_, {layers_[static_cast<std::size_t>(layer)].count});
}

void LayerStreamer::release(int layer) {
  const int slot = slot_of(layer);
  MLPO_CHECK(slot >= 0 && slots_[static_cast<std::size_t>(slot)].in_use,
             "LayerStreamer::release: layer " + std::to_string(layer) + " is not acquired");
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.released.record(backend_.compute_stream());
  s.in_use = false;
}

void LayerStreamer::weights_changed() {
  copy_stream_.synchronize();
  for (Slot& s : slots_) {
    MLPO_CHECK(!s.in_use, "LayerStreamer::weights_changed while layer " + std::to_string(s.layer) + " is acquired");
    s.layer = -1;
  }
}

void GradientCopier::copy_to_host(Tensor src, void* dst) {
  ready_.record(backend_.compute_stream());
  ready_.wait_on(stream_.get());
  gpu::check(cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, stream_.get()),
             "gradient copy (device to host)");
}

void GradientCopier::order_compute_after_copies() {
  copied_.record(stream_.get());
  copied_.wait_on(backend_.compute_stream());
}

void GradientCopier::wait() { stream_.synchronize(); }

}  // namespace mlpo
