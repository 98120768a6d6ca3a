#pragma once
// GradientHandover: the step's summed fp32 gradient, as backward finishes it range by range
// on the compute device, on its way to this rank's bf16 host gradient — the input of the
// update phase (delayed conversion: the update widens it to fp32 on the fly).
//
//  * one rank: each range is cast to bf16 on the device and copied to host memory at once
//    (the rank's shard is the whole model);
//  * ZeRO-3 (several ranks): each range is copied to host as fp32 and reduce-scattered on the
//    LayerExchange thread while backward goes on, so the rank keeps the rank-order tree sum
//    of its piece of the range (in fp32: one bf16 rounding at the end, exactly as one process
//    rounds its sum); finish() waits for the exchanges and rounds the fp32 shard to bf16.
//
// Both give bitwise the same bf16 values for the same fp32 sums. Memory: ZeRO-3 keeps an fp32
// and a bf16 shard plus two fp32 host buffers of the largest range (a range's reduce-scatter
// must finish before its buffer is reused); one rank keeps the bf16 gradient and a device
// buffer of the largest range.

#include <span>
#include <vector>

#include "core/bf16.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "kernels/backend.hpp"

namespace mlpo::train {

class GradientHandover {
 public:
  // `exchange` null: one rank (partition of one). Otherwise the rank's LayerExchange.
  GradientHandover(Backend& backend, const ParameterLayout& layout, const comm::ZeroPartition& partition,
                   comm::LayerExchange* exchange);

  // `summed` ([range.count] fp32 on the device) is the step's final gradient of `range`.
  void range_final(ParameterRange range, Tensor summed);
  // Every range has been handed over: waits for what is in flight (drains the exchange).
  void finish();

  // This rank's bf16 gradient (partition.mine(), shard order); complete after finish().
  std::span<const bf16> shard() const { return grads16_; }

 private:
  Backend& backend_;
  const comm::ZeroPartition& partition_;
  comm::LayerExchange* exchange_;
  std::vector<bf16> grads16_;
  // one rank
  DeviceBuffer device_half_;
  // ZeRO-3
  std::vector<float> grads32_;
  std::vector<float> staging_[2];
  comm::Pending pending_[2];
  int next_staging_ = 0;
};

}  // namespace mlpo::train
