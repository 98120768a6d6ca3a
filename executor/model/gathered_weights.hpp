#pragma once
// GatheredWeights: ZeRO-3 weights of one data-parallel rank. The rank holds only its shard of
// the bf16 weights in host memory (ZeroPartition::mine(), rewritten by its update phase); a
// part's weights are all-gathered from every rank's shard when the model needs them.
//
// Each pass walks its parts through a comm::PrefetchedLayers: the gather of the next range
// runs on the LayerExchange's thread while the current part computes (one range ahead, two
// host buffers of the largest range). acquire() waits for the part's ranges, copies them to
// one device buffer of the largest part and returns that; the host buffer is free again at
// once. backward() gathers every layer again (the memory saving of ZeRO-3 is that no rank
// keeps a full copy). Memory: weights shard + 2 host buffers of the largest range + 1 device
// buffer of the largest part; no full-size weight buffer anywhere.
//
// Collective: every rank must run the same passes (the same program does), since each
// acquire takes part in all-gathers. The LayerExchange must outlive this provider, and the
// shard must not change while a pass is walked (the update phase runs between steps).

#include <memory>
#include <span>
#include <vector>

#include "core/bf16.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/model/weight_provider.hpp"
#include "kernels/backend.hpp"

namespace mlpo::model {

class GatheredWeights final : public WeightProvider {
 public:
  // `shard`: this rank's bf16 weights, exchange.partition().mine().elements of them.
  GatheredWeights(Backend& backend, const ParameterLayout& layout, comm::LayerExchange& exchange,
                  std::span<const bf16> shard);
  ~GatheredWeights() override;

  DType storage() const override { return DType::bf16; }
  std::int64_t device_bytes() const override { return static_cast<std::int64_t>(device_.bytes()); }
  void begin_pass(WeightPass pass) override;
  PartWeights acquire(WeightPart part) override;
  void release(WeightPart) override {}

 private:
  Backend& backend_;
  ParameterLayout layout_;
  comm::LayerExchange& exchange_;
  std::span<const bf16> shard_;
  std::vector<bf16> host_a_, host_b_;
  DeviceBuffer device_;
  std::int64_t device_elements_;
  std::vector<WeightPart> walk_;
  std::size_t next_ = 0;
  std::unique_ptr<comm::PrefetchedLayers> prefetch_;
};

}  // namespace mlpo::model
