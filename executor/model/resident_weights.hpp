#pragma once
// ResidentWeights: every weight of the model in one flat device buffer of the storage type,
// in ParameterLayout order — the model's default provider. acquire() hands out views into the
// buffer and costs nothing; device memory is parameters x storage size.

#include <cstdint>
#include <span>

#include "core/thread_pool.hpp"
#include "executor/model/weight_provider.hpp"
#include "kernels/backend.hpp"

namespace mlpo::model {

class ResidentWeights final : public WeightProvider {
 public:
  ResidentWeights(Backend& backend, const ParameterLayout& layout, DType storage);

  Tensor flat() const { return flat_; }  // [total] of the storage type

  // flat := initial_values(layout, seed) rounded to the storage type; computed on `threads`
  // when given (bitwise the same values).
  void init(std::uint64_t seed, ThreadPool* threads = nullptr);
  // flat := values (fp32, layout order, total of them) rounded to the storage type; staged
  // through a 1 Mi-element fp32 device buffer that is freed on return.
  void load(std::span<const float> values);
  // flat := host (total elements of the storage type, layout order), copied as they are.
  void upload(const void* host);

  DType storage() const override { return flat_.dtype; }
  std::int64_t device_bytes() const override { return static_cast<std::int64_t>(flat_.bytes()); }
  void begin_pass(WeightPass) override {}
  PartWeights acquire(WeightPart part) override;
  void release(WeightPart) override {}

 private:
  Backend& backend_;
  ParameterLayout layout_;
  DeviceBuffer buffer_;
  Tensor flat_;
};

}  // namespace mlpo::model
