// Copies beside the compute stream (CudaCopyQueue) and the parameter offload built on them
// (HostStreamedWeights over CudaBackend): copies see what earlier ops wrote and never
// overwrite what they read; ops after order_compute_after_copies see the copies; and the
// host-streamed model on the GPU is bitwise the GPU-resident model — the same weights arrive,
// only from pinned host memory through a copy stream, fetched ahead of use.
#include <cstring>
#include <functional>

#include "executor/model/host_streamed_weights.hpp"
#include "kernels/cuda/internal/cuda_copy_queue.hpp"
#include "tests/kernels/cuda/cuda_test_util.hpp"
#include "tests/executor/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

using CopyQueueTest = CudaTest;
using HostStreamedOnGpu = CudaTest;

std::vector<float> download(CudaBackend& backend, Tensor t) {
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  backend.copy_to_host(host.data(), t);
  return host;
}

TEST_F(CopyQueueTest, DeviceToHostSeesEarlierOpsAndLaterOpsWaitForIt) {
  CudaBackend backend;
  auto queue = backend.make_copy_queue();
  constexpr std::int64_t n = 1 << 22;  // 16 MiB: long enough for a race to show
  DeviceBuffer grads = backend.allocate(DType::f32, n);
  Tensor g = grads.view(DType::f32, {n});
  HostBuffer host = backend.allocate_host(n * sizeof(float));
  backend.fill(g, 3.0);
  queue->to_host(host.data(), g);  // after the fill
  queue->order_compute_after_copies();
  backend.fill(g, -1.0);  // only after the copy has read g
  queue->wait();
  const float* h = static_cast<const float*>(host.data());
  EXPECT_EQ(std::vector<float>(h, h + n), std::vector<float>(n, 3.0f));
  EXPECT_EQ(download(backend, g), std::vector<float>(n, -1.0f));
}

TEST_F(CopyQueueTest, HostToDeviceWaitsForOpsThatReadTheTarget) {
  CudaBackend backend;
  auto queue = backend.make_copy_queue();
  constexpr std::int64_t n = 1 << 22;
  DeviceBuffer a = backend.allocate(DType::f32, n), b = backend.allocate(DType::f32, n);
  Tensor ta = a.view(DType::f32, {n}), tb = b.view(DType::f32, {n});
  HostBuffer host = backend.allocate_host(n * sizeof(float));
  std::vector<float> twos(n, 2.0f);
  std::memcpy(host.data(), twos.data(), n * sizeof(float));
  backend.fill(ta, 1.0);
  backend.copy(tb, ta);               // reads a ...
  queue->to_device(ta, host.data());  // ... before the copy overwrites it
  queue->order_compute_after_copies();
  backend.add(tb, tb, ta);  // 1 + 2
  EXPECT_EQ(download(backend, tb), std::vector<float>(n, 3.0f));
}

// The tiny model trained two steps with a weight change between them, as in tests/executor/model, on
// the GPU: resident vs host-streamed through 1, 2 and 3 device slots, tied and untied, with
// the host weights in pinned memory. Losses and gradients must be bitwise equal.
struct GpuOutcome {
  std::vector<double> losses;
  std::vector<std::vector<float>> gradients;
};

GpuOutcome two_steps(CudaBackend& backend, model::TransformerModel& model,
                     const std::function<void()>& change) {
  GpuOutcome out;
  for (int step = 0; step < 2; ++step) {
    model.zero_gradients();
    for (int micro = 0; micro < 2; ++micro) {
      const Batch b = random_batch(model.shape(), 2, static_cast<std::uint64_t>(100 + 10 * step + micro));
      out.losses.push_back(model.forward(b.tokens, b.targets));
      model.backward(0.5f);
    }
    out.gradients.push_back(download(backend, model.gradients()));
    if (step == 0) change();
  }
  return out;
}

void change(bf16* w, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) w[i] = float_to_bf16(bf16_to_float(w[i]) * 0.99f + 1e-3f);
}

TEST_F(HostStreamedOnGpu, BitwiseEqualToResidentWithAnyNumberOfSlots) {
  for (bool tied : {false, true}) {
    CudaBackend backend;
    const model::ModelShape shape = tiny_shape(tied);
    const model::ParameterLayout layout(shape);
    const std::size_t n = static_cast<std::size_t>(layout.total());
    const std::vector<float> initial = spread_weights(layout, 7, 3.0f);
    std::vector<bf16> start(n);
    for (std::size_t i = 0; i < n; ++i) start[i] = float_to_bf16(initial[i]);

    model::TransformerModel resident(backend, shape, {2, DType::bf16});
    std::vector<bf16> host = start;
    backend.copy_from_host(resident.weights(), host.data());
    const GpuOutcome want = two_steps(backend, resident, [&] {
      change(host.data(), n);
      backend.copy_from_host(resident.weights(), host.data());
    });

    for (int slots : {1, 2, 3}) {
      HostBuffer pinned = backend.allocate_host(n * sizeof(bf16));
      bf16* w = static_cast<bf16*>(pinned.data());
      std::memcpy(w, start.data(), n * sizeof(bf16));
      model::HostStreamedWeights streamed(backend, layout, DType::bf16, w, slots);
      model::TransformerModel model(backend, shape, {2, DType::bf16}, &streamed);
      const GpuOutcome got = two_steps(backend, model, [&] {
        streamed.drop_device_copies();
        change(w, n);
      });
      EXPECT_EQ(got.losses, want.losses) << "tied=" << tied << " slots=" << slots;
      EXPECT_TRUE(got.gradients == want.gradients) << "tied=" << tied << " slots=" << slots;
      if (slots == 2) {
        EXPECT_EQ(streamed.demand_fetches(), 0) << "two slots: every part was fetched ahead of use";
      }
    }
  }
}

// Streamed gradients on the GPU: each range handed to the hook (read back at once, before
// later ops may reuse its buffer) is bitwise the resident model's gradient.
TEST_F(HostStreamedOnGpu, StreamedGradientsBitwiseEqualToResident) {
  for (bool tied : {false, true}) {
    CudaBackend backend;
    const model::ModelShape shape = tiny_shape(tied);
    const model::ParameterLayout layout(shape);
    const std::size_t n = static_cast<std::size_t>(layout.total());
    const std::vector<float> initial = spread_weights(layout, 9, 3.0f);
    HostBuffer pinned = backend.allocate_host(n * sizeof(bf16));
    bf16* w = static_cast<bf16*>(pinned.data());
    for (std::size_t i = 0; i < n; ++i) w[i] = float_to_bf16(initial[i]);
    model::TransformerModel resident(backend, shape, {2, DType::bf16});
    backend.copy_from_host(resident.weights(), w);
    model::HostStreamedWeights streamed(backend, layout, DType::bf16, w, 2);
    model::TransformerModel model(backend, shape, {2, DType::bf16, true}, &streamed);
    const Batch b = random_batch(shape, 2, 77);
    EXPECT_EQ(model.forward(b.tokens, b.targets), resident.forward(b.tokens, b.targets));
    resident.backward();
    const std::vector<float> want = download(backend, resident.gradients());
    std::int64_t covered = 0;
    model.backward(1.0f, [&](const model::GradientSegment& seg) {
      const std::vector<float> got = download(backend, seg.gradient);
      const std::vector<float> expected(want.begin() + seg.range.offset,
                                        want.begin() + seg.range.offset + seg.range.count);
      EXPECT_TRUE(got == expected) << "tied=" << tied << " range at " << seg.range.offset;
      covered += seg.range.count;
    });
    EXPECT_EQ(covered, layout.total());
  }
}

}  // namespace
}  // namespace mlpo::testing
