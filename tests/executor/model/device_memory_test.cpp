#include "executor/model/device_memory.hpp"

#include <gtest/gtest.h>

#include "executor/model/gathered_weights.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "tests/executor/model/counting_backend.hpp"
#include "tests/executor/model/model_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::testing {
namespace {

TEST(DeviceMemory, EstimateEqualsWhatTheModelAllocatesAtPeak) {
  for (bool tied : {false, true})
    for (DType storage : {DType::bf16, DType::f32}) {
      ThreadPool pool(1);
      CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
      CountingBackend counting(cpu);
      const model::ModelShape shape = tiny_shape(tied);
      const model::TransformerOptions options{3, storage};
      {
        model::TransformerModel model(counting, shape, options);
        model.init_weights(1);  // load_weights' staging buffer is part of the peak
      }
      EXPECT_EQ(model::model_device_memory(shape, options).total(), counting.allocated())
          << "tied=" << tied << " storage=" << dtype_name(storage);
    }
}

// Streamed gradients: one buffer of the largest part (and the tied embedding's), no full
// gradient; with a streaming provider nothing as large as the weights is left on the device.
TEST(DeviceMemory, StreamedGradientsHoldNoFullGradientBuffer) {
  for (bool tied : {false, true}) {
    ThreadPool pool(1);
    CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
    CountingBackend counting(cpu);
    const model::ModelShape shape = tiny_shape(tied);
    const model::ParameterLayout layout(shape);
    const model::TransformerOptions options{2, DType::bf16, true};
    const std::vector<bf16> host(static_cast<std::size_t>(layout.total()));
    model::HostStreamedWeights streamed(counting, layout, DType::bf16, host.data(), 2);
    model::TransformerModel model(counting, shape, options, &streamed);
    EXPECT_EQ(model::model_device_memory(shape, options, 0, {2}).total(), counting.allocated())
        << "tied=" << tied;
    EXPECT_EQ(model::model_device_memory(shape, options, 0, {2}).gradients,
              model::streamed_gradient_elements(layout) * 4);
    EXPECT_EQ(counting.allocations_of_at_least(layout.total() * 2), 0) << "tied=" << tied;
  }
}

// Parameter offload and ZeRO-3 hold `slots` buffers of the largest part on the device instead of
// every weight, and the estimate says so.
TEST(DeviceMemory, StreamingProvidersHoldNoFullWeightBuffer) {
  for (bool tied : {false, true}) {
    ThreadPool pool(1);
    CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
    const model::ModelShape shape = tiny_shape(tied);
    const model::ParameterLayout layout(shape);
    const model::TransformerOptions options{2, DType::bf16};
    const std::vector<bf16> host(static_cast<std::size_t>(layout.total()));
    const std::int64_t full_weights = layout.total() * 2;
    {
      CountingBackend counting(cpu);
      model::HostStreamedWeights streamed(counting, layout, DType::bf16, host.data(), 2);
      model::TransformerModel model(counting, shape, options, &streamed);
      EXPECT_EQ(model::model_device_memory(shape, options, 0, {2}).total(), counting.allocated())
          << "tied=" << tied;
      EXPECT_EQ(streamed.device_bytes(), 2 * model::largest_part_elements(layout) * 2);
      // Of everything as large as the bf16 weights, only the fp32 gradient buffer remains.
      EXPECT_EQ(counting.allocations_of_at_least(full_weights), 1);
      EXPECT_LT(model::model_device_memory(shape, options, 0, {2}).weights, full_weights);
    }
    {
      CountingBackend counting(cpu);
      comm::SingleProcessCommunicator comm;
      const comm::ZeroPartition partition(layout.total(), 1, 0);
      comm::LayerExchange exchange(comm, partition);
      model::GatheredWeights gathered(counting, layout, exchange, host);
      model::TransformerModel model(counting, shape, options, &gathered);
      EXPECT_EQ(model::model_device_memory(shape, options, 0, {1}).total(), counting.allocated())
          << "tied=" << tied;
      EXPECT_EQ(gathered.device_bytes(), model::largest_part_elements(layout) * 2);
    }
  }
}

TEST(DeviceMemory, ShortfallNamesNeedAndFreeMemory) {
  const model::ModelShape shape = tiny_shape();
  const model::DeviceMemoryNeed need = model::model_device_memory(shape, {2, DType::bf16}, 1000);
  EXPECT_EQ(need.backend, 1000);
  EXPECT_NO_THROW(
      model::require_device_memory(need, static_cast<std::size_t>(need.total()), 1 << 30, "cuda:0"));
  expect_refusal(
      [&] {
        model::require_device_memory(need, static_cast<std::size_t>(need.total() - 1), 1 << 30, "cuda:0");
      },
      {"cuda:0", "short by 1 B", "parameter offload"}, "a 1-byte shortfall was accepted");
}

TEST(DeviceMemory, ActivationsGrowLinearlyWithBatch) {
  const model::ModelShape shape = tiny_shape();
  const auto one = model::model_device_memory(shape, {1, DType::bf16}),
             two = model::model_device_memory(shape, {2, DType::bf16});
  const auto four = model::model_device_memory(shape, {4, DType::bf16});
  EXPECT_EQ(one.weights, two.weights);
  EXPECT_EQ(four.activations - two.activations, 2 * (two.activations - one.activations));
}

}  // namespace
}  // namespace mlpo::testing
