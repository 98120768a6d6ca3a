#pragma once
// HostStreamedWeights: parameter offload for one rank. All weights stay in host memory (a
// flat buffer of the storage type in layout order, owned by the caller — the trainer's bf16
// weights, which the update phase rewrites); the device holds `slots` buffers, each as large
// as the largest part (largest_part_elements), so device memory for weights is bounded by
// slots x largest part instead of the whole model.
//
// acquire(part) makes the part resident (a demand fetch when it is not), orders the backend's
// ops after its fetch, then fetches the next slots - 1 parts of the walk into free slots. The
// copies go through a CopyQueue of the backend (kernels/backend.hpp): on CUDA a copy stream of
// their own, so the fetch of part k+1 runs while part k computes, and the compute stream waits
// (an event, not the host) only for the part it is about to use; on the CPU backend the copies
// happen at once. A fetch into a slot starts after every op enqueued so far, so it never
// overwrites weights a queued op still reads (the slot's part was released, so its ops are
// all enqueued). A slot whose part is held or is among the parts about to be used is never
// refilled. Parts still resident when the next pass starts are reused: backward starts with
// the head that forward ended with, so it costs no copy.
//
// The host weights should be Backend::allocate_host memory (pinned on CUDA) for the copies to
// overlap. Weights are copied byte for byte, so results are bitwise those of ResidentWeights.
// Before the host weights are rewritten (an update phase), call drop_device_copies(): it waits
// for the fetches in flight (they read the host buffer) and forgets every device copy.

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/model/weight_provider.hpp"
#include "kernels/backend.hpp"

namespace mlpo::model {

class HostStreamedWeights final : public WeightProvider {
 public:
  // `host_weights`: layout.total() elements of `storage`, alive as long as this provider.
  // `slots` >= 1 (2 lets the next part be fetched while one is held). Throws mlpo::Error for
  // slots < 1.
  HostStreamedWeights(Backend& backend, const ParameterLayout& layout, DType storage,
                      const void* host_weights, int slots);
  ~HostStreamedWeights() override;  // waits for the fetches in flight

  // Waits for the fetches in flight, then forgets every device copy, so that the host weights
  // may be rewritten: the next acquire of each part fetches them again. No part may be held.
  void drop_device_copies();

  std::int64_t fetches() const { return fetches_; }                // parts copied to the device
  std::int64_t demand_fetches() const { return demand_fetches_; }  // of those, fetched only when acquired
  std::int64_t fetched_bytes() const { return fetched_bytes_; }    // host -> device, in all

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
  std::unique_ptr<CopyQueue> fetch_queue_;
  ParameterLayout layout_;
  DType storage_;
  const char* host_;
  std::int64_t slot_elements_;
  std::vector<Slot> slots_;
  std::vector<WeightPart> walk_;
  std::size_t next_ = 0;  // position in walk_ of the next acquire
  std::int64_t clock_ = 0, fetches_ = 0, demand_fetches_ = 0, fetched_bytes_ = 0;
};

}  // namespace mlpo::model
