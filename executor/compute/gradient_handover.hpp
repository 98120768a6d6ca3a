#pragma once
// GradientHandover: the step's summed fp32 gradient, as backward finishes it range by range
// on the compute device, on its way to this rank's bf16 host gradient — the input of the
// update phase (delayed conversion: the update widens it to fp32 on the fly).
//
//  * one rank: each range is cast to bf16 on the device (into one of two staging buffers of
//    the largest range) and copied to host memory on a copy queue of the backend, so on a GPU
//    the copy runs while backward computes the next layer; a staging buffer is cast into
//    again only after its previous copy has finished (the compute stream waits for it, not the
//    host). The host gradient is Backend::allocate_host memory (pinned on CUDA);
//  * ZeRO-3 (several ranks): each range is copied to host as fp32 and reduce-scattered on the
//    LayerExchange thread while backward goes on, so the rank keeps the rank-order tree sum
//    of its piece of the range (in fp32: one bf16 rounding at the end, exactly as one process
//    rounds its sum); finish() waits for the exchanges and rounds the fp32 shard to bf16.
//
// Both give bitwise the same bf16 values for the same fp32 sums. Memory: ZeRO-3 keeps an fp32
// and a bf16 shard plus two fp32 host buffers of the largest range (a range's reduce-scatter
// must finish before its buffer is reused); one rank keeps the bf16 gradient and two device
// buffers of the largest range (staging_bytes()).
// `summed` may be overwritten by ops enqueued after range_final returns (streamed gradients):
// both paths take it away first (the cast, or the synchronous fp32 copy).

#include <memory>
#include <span>
#include <vector>

#include "core/bf16.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "kernels/backend.hpp"

namespace mlpo::compute {

class GradientHandover {
 public:
  // `exchange` null: one rank (partition of one). Otherwise the rank's LayerExchange.
  GradientHandover(Backend& backend, const model::ParameterLayout& layout,
                   const comm::ZeroPartition& partition, comm::LayerExchange* exchange);

  // `summed` ([range.count] fp32 on the device) is the step's final gradient of `range`.
  void range_final(model::ParameterRange range, Tensor summed);
  // Every range has been handed over: waits for what is in flight (the copies, or the
  // exchange).
  void finish();

  // This rank's bf16 gradient (partition.mine(), shard order); complete after finish().
  std::span<const bf16> shard() const { return grads16_; }

  // Device bytes it allocates for `layout` on one rank (the two bf16 staging buffers); none
  // with several ranks. For the up-front memory check.
  static std::int64_t device_bytes(const model::ParameterLayout& layout, int ranks);

 private:
  Backend& backend_;
  const comm::ZeroPartition& partition_;
  comm::LayerExchange* exchange_;
  HostBuffer grads16_owner_;
  std::span<bf16> grads16_;
  // one rank
  std::unique_ptr<CopyQueue> copies_;
  DeviceBuffer device_half_[2];
  bool half_in_flight_[2] = {false, false};
  int next_half_ = 0;
  // ZeRO-3
  std::vector<float> grads32_;
  std::vector<float> staging_[2];
  comm::Pending pending_[2];
  int next_staging_ = 0;
};

}  // namespace mlpo::compute
