#pragma once
// HostStreamedWeights: parameter offload for one rank. All weights stay in host memory (a
// flat buffer of the storage type in layout order, owned by the caller — the trainer's bf16
// weights, which the update phase rewrites); the device holds `slots` buffers, each as large
// as the largest part (largest_part_elements), so device memory for weights is bounded by
// slots x largest part instead of the whole model.
//
// acquire(part) makes the part resident (a demand fetch when it is not: copy host -> device),
// then fetches the next slots - 1 parts of the walk into free slots — the prefetch that a
// backend with asynchronous copies overlaps with compute (on the CPU backend and with the
// Backend interface's synchronous copy_from_host the copy simply happens earlier; the CUDA
// LayerStreamer in kernels/cuda is the overlapping version of the same schedule). A slot
// whose part is held or is among the parts about to be used is never refilled. Parts still
// resident when the next pass starts are reused: backward starts with the head that forward
// ended with, so it costs no copy.
//
// Weights are copied byte for byte, so results are bitwise those of ResidentWeights. After
// the host weights change (an update phase), call weights_changed().

#include <cstdint>
#include <vector>

#include "executor/model/weight_provider.hpp"
#include "kernels/backend.hpp"

namespace mlpo {

class HostStreamedWeights final : public WeightProvider {
 public:
  // `host_weights`: layout.total() elements of `storage`, alive as long as this provider.
  // `slots` >= 1 (2 lets the next part be fetched while one is held). Throws mlpo::Error for
  // slots < 1.
  HostStreamedWeights(Backend& backend, const ParameterLayout& layout, DType storage, const void* host_weights, int slots);

  // Forgets every resident copy: the next acquire of each part fetches the host weights again.
  void weights_changed();

  std::int64_t fetches() const { return fetches_; }                // parts copied to the device
  std::int64_t demand_fetches() const { return demand_fetches_; }  // of those, fetched only when acquired

  DType storage() const override { return storage_; }
  std::int64_t device_bytes() const override;
  void begin_pass(WeightPass pass) override;
  PartWeights acquire(WeightPart part) override;
  void release(WeightPart part) override;

 private:
  struct Slot {
    DeviceBuffer buffer;
    int part = -1;  // part_index of what it holds, -1: empty
    bool held = false;
    std::int64_t last_use = 0;
  };
  int slot_holding(int part) const;
  // A slot that may be refilled: not held, not holding one of `keep` (the parts about to be
  // used); least recently used first, empty ones before all. -1 when none.
  int refillable_slot(const std::vector<int>& keep) const;
  void fetch(WeightPart part, int slot);
  void prefetch_from(std::size_t position);

  Backend& backend_;
  ParameterLayout layout_;
  DType storage_;
  const char* host_;
  std::int64_t slot_elements_;
  std::vector<Slot> slots_;
  std::vector<WeightPart> walk_;
  std::size_t next_ = 0;  // position in walk_ of the next acquire
  std::int64_t clock_ = 0, fetches_ = 0, demand_fetches_ = 0;
};

}  // namespace mlpo
