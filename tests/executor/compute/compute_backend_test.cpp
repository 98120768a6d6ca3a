// The compute backend of a training run: --backend parsing, the error without a usable GPU (or
// without CUDA in the build), and the up-front memory check — its estimate equals what the
// model, the gradient hand-over and the micro-batch sums allocate, and its message names the
// bytes needed and available and the fix.
#include "executor/compute/compute_backend.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "core/units.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/compute/gradient_handover.hpp"
#include "executor/compute/micro_batch_gradient_sum.hpp"
#include "tests/executor/model/counting_backend.hpp"
#include "tests/executor/train/training_objects.hpp"
#include "tests/executor/model/model_test_util.hpp"
#if MLPO_HAVE_CUDA
#include "kernels/cuda/device.hpp"
#endif

namespace mlpo::compute {
namespace {

TEST(BackendChoice, ParsesCpuCudaAndCudaN) {
  EXPECT_EQ(parse_backend("cpu", "--backend").kind, BackendChoice::Kind::cpu);
  const BackendChoice any = parse_backend("cuda", "--backend");
  EXPECT_EQ(any.kind, BackendChoice::Kind::cuda);
  EXPECT_EQ(any.device, -1);
  EXPECT_EQ(parse_backend("cuda:3", "--backend").device, 3);
  EXPECT_EQ(parse_backend("cuda:3", "--backend").describe(), "cuda:3");
}

TEST(BackendChoice, RejectsWhatItDoesNotKnowNamingTheOption) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "CPU", ""}) {
    try {
      parse_backend(bad, "--backend");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--backend: unknown compute backend"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("cuda:N"), std::string::npos) << e.what();
    }
  }
}

// Where no GPU is usable (every CI machine), asking for one is an error with CUDA's reason —
// never a silent CPU run. On a GPU machine the same call opens the device.
TEST(OpenBackend, CudaWithoutAUsableGpuIsAnErrorNamingTheReason) {
  ThreadPool pool(1);
#if MLPO_HAVE_CUDA
  const CudaAvailability gpu = cuda_available();
  if (gpu.available) {
    const ComputeBackend b = open_backend(parse_backend("cuda", "--backend"), pool, 1, 0);
    ASSERT_TRUE(b.memory.has_value());
    EXPECT_GT(b.memory->total, 0u);
    EXPECT_EQ(b.backend->name(), "cuda:0");
    EXPECT_THROW(open_backend(parse_backend("cuda:999", "--backend"), pool, 1, 0), Error);
    return;
  }
  try {
    open_backend(parse_backend("cuda:0", "--backend"), pool, 1, 0);
    ADD_FAILURE() << "opened a CUDA backend without a GPU";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--backend cuda:0: no usable CUDA device: ", 0), 0u) << m;
    EXPECT_NE(m.find(gpu.reason), std::string::npos) << m;  // CUDA's own words, e.g. the driver version
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
#else
  EXPECT_THROW(open_backend(parse_backend("cuda", "--backend"), pool, 1, 0), Error);
#endif
}

TEST(OpenBackend, CpuHasNoDeviceMemoryToCheck) {
  ThreadPool pool(1);
  const ComputeBackend b = open_backend(parse_backend("cpu", "--backend"), pool, 1, 0);
  EXPECT_FALSE(b.memory.has_value());
  EXPECT_EQ(b.scratch_bound(4096, AttentionDims{8, 2048, 32, 8, 128}), 0);
  EXPECT_EQ(b.backend->name(), "cpu");
}

TEST(TrainingDeviceMemory, EstimateEqualsWhatTrainingAllocates) {
  for (bool tied : {false, true})
    for (int accum : {1, 2, 3, 5})
      for (bool offload : {false, true}) {
        const model::ModelShape shape = testing::tiny_shape(tied);
        const TrainingFootprint f{2, accum, 1, offload};
        // The resident provider's load staging chunk is not allocated by training (it uploads
        // bf16 directly): count it out of the estimate the model test checks byte for byte.
        const std::int64_t staging = offload ? 0 : (std::int64_t{1} << 20) * 4;
        EXPECT_EQ(training_device_memory(shape, f, 0).total() - staging,
                  train::allocated_by_training(shape, f).device)
            << "tied=" << tied << " accum=" << accum << " offload=" << offload;
      }
}

// Parameter offload with one micro-batch per step keeps neither the weights nor the gradients
// whole on the device: what it needs grows with the largest layer, not with the layer count.
TEST(TrainingDeviceMemory, ParamOffloadIsBoundedByTheLargestLayer) {
  model::ModelShape shallow = testing::tiny_shape(false), deep = shallow;
  deep.layers = 40;
  const TrainingFootprint f{2, 1, 1, true};
  const model::DeviceMemoryNeed a = training_device_memory(shallow, f, 0),
                                b = training_device_memory(deep, f, 0);
  EXPECT_EQ(b.weights, a.weights);
  EXPECT_EQ(b.gradients, a.gradients);
  const model::DeviceMemoryNeed resident = training_device_memory(deep, {2, 1, 1, false}, 0);
  EXPECT_EQ(resident.gradients, model::ParameterLayout(deep).total() * 4);
  EXPECT_LT(b.total(), resident.total() / 4);
}

TEST(TrainingMemoryCheck, ShortfallNamesNeededAndAvailableAndSuggestsParamOffload) {
  const model::ModelShape shape = testing::tiny_shape(false);
  const TrainingFootprint f{2, 1, 1, false};
  const model::DeviceMemoryNeed need = training_device_memory(shape, f, 1000);
  TrainingFootprint off = f;
  off.param_offload = true;
  const model::DeviceMemoryNeed offloaded = training_device_memory(shape, off, 1000);
  ASSERT_LT(offloaded.total(), need.total());
  EXPECT_NO_THROW(require_training_memory(need, f, &offloaded, static_cast<std::size_t>(need.total()),
                                          1 << 30, "cuda:0", ""));
  const auto available = static_cast<std::size_t>(offloaded.total());  // fits only with offload
  try {
    require_training_memory(need, f, &offloaded, available, std::size_t{1} << 30, "cuda:0 (test)",
                            " under --gpu-memory-limit");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the run needs " + need.describe() + " of memory on cuda:0 (test)"), std::string::npos)
        << m;
    EXPECT_NE(m.find(format_bytes(static_cast<double>(available)) +
                     " available under --gpu-memory-limit (1.0 GiB in all"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("short by " + format_bytes(static_cast<double>(need.total() - offloaded.total()))),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("use --param-offload"), std::string::npos) << m;
  }
  // Already offloaded and still short: the fix is a smaller micro-batch or sequence.
  try {
    require_training_memory(offloaded, off, nullptr, 1000, std::size_t{1} << 30, "cuda:0", "");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("smaller --micro-batch or --seq-len"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mlpo::compute
