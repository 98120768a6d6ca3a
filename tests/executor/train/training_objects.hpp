#pragma once
// What the trainer's objects of one process allocate, built on a counting CPU backend exactly
// as TrainingRun builds them for a footprint: the rank's bf16 host weights (allocate_host),
// the weight provider (streamed from those weights or resident), the model, the gradient
// hand-over and the micro-batch sums. The memory accountings (training_device_memory,
// training_host_memory) are tested against these counts.

#include <cstdint>
#include <memory>
#include <optional>

#include "core/bf16.hpp"
#include "core/thread_pool.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/model/transformer_model.hpp"
#include "executor/compute/compute_backend.hpp"
#include "executor/compute/gradient_handover.hpp"
#include "executor/compute/micro_batch_gradient_sum.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "tests/executor/model/counting_backend.hpp"

namespace mlpo::train {

struct TrainingAllocations {
  std::int64_t device = 0;  // Backend::allocate (on the CPU backend: host memory too)
  std::int64_t host = 0;    // Backend::allocate_host, the bf16 weights included
};

inline TrainingAllocations allocated_by_training(const model::ModelShape& shape,
                                                 const compute::TrainingFootprint& f) {
  ThreadPool pool(1);
  CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
  testing::CountingBackend counting(cpu);
  const model::ParameterLayout layout(shape);
  const HostBuffer weights = counting.allocate_host(static_cast<std::size_t>(layout.total()) * sizeof(bf16));
  std::unique_ptr<model::WeightProvider> provider;
  if (compute::weight_slots(f) > 0)
    provider = std::make_unique<model::HostStreamedWeights>(
        counting, layout, DType::bf16, static_cast<const bf16*>(weights.data()), compute::weight_slots(f));
  else
    provider = std::make_unique<model::ResidentWeights>(counting, layout, DType::bf16);
  model::TransformerModel model(counting, shape, {f.micro_batch, DType::bf16, compute::streams_gradients(f)},
                                provider.get());
  const comm::ZeroPartition partition(layout.total(), 1, 0);
  compute::GradientHandover handover(counting, layout, partition, nullptr);
  std::optional<compute::MicroBatchGradientSum> sum;
  if (!compute::streams_gradients(f)) sum.emplace(counting, model.gradients(), f.grad_accum);
  return {counting.allocated(), counting.host_allocated()};
}

}  // namespace mlpo::train
