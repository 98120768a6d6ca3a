#include "executor/model/device_memory.hpp"

#include <gtest/gtest.h>

#include "executor/model/gathered_weights.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "tests/model/counting_backend.hpp"
#include "tests/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

TEST(DeviceMemory, EstimateEqualsWhatTheModelAllocatesAtPeak) {
  for (bool tied : {false, true})
    for (DType storage : {DType::bf16, DType::f32}) {
      ThreadPool pool(1);
      CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
      CountingBackend counting(cpu);
      const ModelShape shape = tiny_shape(tied);
      const TransformerOptions options{3, storage};
      {
        TransformerModel model(counting, shape, options);
        model.init_weights(1);  // load_weights' staging buffer is part of the peak
      }
      EXPECT_EQ(model_device_memory(shape, options).total(), counting.allocated())
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
    const ModelShape shape = tiny_shape(tied);
    const ParameterLayout layout(shape);
    const TransformerOptions options{2, DType::bf16, true};
    const std::vector<bf16> host(static_cast<std::size_t>(layout.total()));
    HostStreamedWeights streamed(counting, layout, DType::bf16, host.data(), 2);
    TransformerModel model(counting, shape, options, &streamed);
    EXPECT_EQ(model_device_memory(shape, options, 0, {2}).total(), counting.allocated()) << "tied=" << tied;
    EXPECT_EQ(model_device_memory(shape, options, 0, {2}).gradients, streamed_gradient_elements(layout) * 4);
    EXPECT_EQ(counting.allocations_of_at_least(layout.total() * 2), 0) << "tied=" << tied;
  }
}

// Parameter offload and ZeRO-3 hold `slots` buffers of the largest part on the device instead of
// every weight, and the estimate says so.
TEST(DeviceMemory, StreamingProvidersHoldNoFullWeightBuffer) {
  for (bool tied : {false, true}) {
    ThreadPool pool(1);
    CpuBackend cpu(pool, CpuBackendOptions{1, cpu::GemmPath::blas});
    const ModelShape shape = tiny_shape(tied);
    const ParameterLayout layout(shape);
    const TransformerOptions options{2, DType::bf16};
    const std::vector<bf16> host(static_cast<std::size_t>(layout.total()));
    const std::int64_t full_weights = layout.total() * 2;
    {
      CountingBackend counting(cpu);
      HostStreamedWeights streamed(counting, layout, DType::bf16, host.data(), 2);
      TransformerModel model(counting, shape, options, &streamed);
      EXPECT_EQ(model_device_memory(shape, options, 0, {2}).total(), counting.allocated()) << "tied=" << tied;
      EXPECT_EQ(streamed.device_bytes(), 2 * largest_part_elements(layout) * 2);
      // Of everything as large as the bf16 weights, only the fp32 gradient buffer remains.
      EXPECT_EQ(counting.allocations_of_at_least(full_weights), 1);
      EXPECT_LT(model_device_memory(shape, options, 0, {2}).weights, full_weights);
    }
    {
      CountingBackend counting(cpu);
      comm::SingleProcessCommunicator comm;
      const comm::ZeroPartition partition(layout.total(), 1, 0);
      comm::LayerExchange exchange(comm, partition);
      GatheredWeights gathered(counting, layout, exchange, host);
      TransformerModel model(counting, shape, options, &gathered);
      EXPECT_EQ(model_device_memory(shape, options, 0, {1}).total(), counting.allocated()) << "tied=" << tied;
      EXPECT_EQ(gathered.device_bytes(), largest_part_elements(layout) * 2);
    }
  }
}

TEST(DeviceMemory, ShortfallNamesNeedAndFreeMemory) {
  const ModelShape shape = tiny_shape();
  const DeviceMemoryNeed need = model_device_memory(shape, {2, DType::bf16}, 1000);
  EXPECT_EQ(need.backend, 1000);
  EXPECT_NO_THROW(require_device_memory(need, static_cast<std::size_t>(need.total()), 1 << 30, "cuda:0"));
  try {
    require_device_memory(need, static_cast<std::size_t>(need.total() - 1), 1 << 30, "cuda:0");
    FAIL() << "a 1-byte shortfall was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
    EXPECT_NE(m.find("short by 1 B"), std::string::npos) << m;
    EXPECT_NE(m.find("parameter offload"), std::string::npos) << m;
  }
}

TEST(DeviceMemory, ActivationsGrowLinearlyWithBatch) {
  const ModelShape shape = tiny_shape();
  const auto one = model_device_memory(shape, {1, DType::bf16}),
             two = model_device_memory(shape, {2, DType::bf16});
  const auto four = model_device_memory(shape, {4, DType::bf16});
  EXPECT_EQ(one.weights, two.weights);
  EXPECT_EQ(four.activations - two.activations, 2 * (two.activations - one.activations));
}

}  // namespace
}  // namespace mlpo::testing
