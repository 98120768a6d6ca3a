// LayerStreamer and GradientCopier: what arrives on the GPU is the right layer's weights, in
// both walking directions, with a bounded number of resident layers and prefetching that
// turns all but the first fetch of a pass into prefetches; gradients copied while the compute
// stream keeps working land intact.
#include <numeric>

#include "kernels/cuda/layer_streamer.hpp"
#include "tests/cuda/cuda_test_util.hpp"

namespace mlpo::testing {
namespace {

using Streamer = CudaTest;

// Five layers of different sizes, contiguous like a model's layer ranges.
std::vector<LayerSpan> five_layers() {
  std::vector<LayerSpan> spans;
  std::int64_t offset = 100;  // something before the first layer, like the embedding
  for (std::int64_t count : {1000, 1500, 1000, 700, 1200}) {
    spans.push_back({offset, count});
    offset += count;
  }
  return spans;
}

std::vector<float> download(CudaBackend& backend, Tensor t) {
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  backend.copy_to_host(host.data(), t);
  return host;
}

void expect_layer(CudaBackend& backend, const LayerStreamer& s, const LayerSpan& span, Tensor got) {
  ASSERT_EQ(got.numel(), span.count);
  const float* host = static_cast<const float*>(s.host_weights()) + span.offset;
  EXPECT_EQ(download(backend, got), std::vector<float>(host, host + span.count));
}

TEST_F(Streamer, ForwardThenBackwardDeliversEachLayerWithTwoResident) {
  CudaBackend backend;
  const auto spans = five_layers();
  LayerStreamer s(backend, DType::f32, spans, 2);
  EXPECT_EQ(s.resident(), 2);
  float* host = static_cast<float*>(s.host_weights());
  std::iota(host, host + s.host_elements(), 0.0f);

  for (int l = 0; l < 5; ++l) {
    Tensor w = s.acquire(l, +1);
    expect_layer(backend, s, spans[static_cast<std::size_t>(l)], w);
    s.release(l);
  }
  EXPECT_EQ(s.demand_fetches(), 1);  // layer 0; the rest were prefetched
  EXPECT_EQ(s.fetches(), 5);
  for (int l = 4; l >= 0; --l) {
    Tensor w = s.acquire(l, -1);
    expect_layer(backend, s, spans[static_cast<std::size_t>(l)], w);
    s.release(l);
  }
  EXPECT_EQ(s.demand_fetches(), 1);  // layers 4 and 3 were still resident: backward starts warm
  EXPECT_EQ(s.fetches(), 8);
}

TEST_F(Streamer, NewHostWeightsAreFetchedAfterWeightsChanged) {
  CudaBackend backend;
  const auto spans = five_layers();
  LayerStreamer s(backend, DType::f32, spans, 3);
  float* host = static_cast<float*>(s.host_weights());
  std::fill(host, host + s.host_elements(), 1.0f);
  s.acquire(0, +1);
  s.release(0);
  std::fill(host, host + s.host_elements(), 2.0f);  // the update wrote new weights
  s.weights_changed();
  Tensor w = s.acquire(0, +1);
  EXPECT_EQ(download(backend, w), std::vector<float>(static_cast<std::size_t>(spans[0].count), 2.0f));
  s.release(0);
}

TEST_F(Streamer, AcquiringMoreLayersThanResidentIsAnError) {
  CudaBackend backend;
  LayerStreamer s(backend, DType::f32, five_layers(), 1);
  s.acquire(0, +1);
  EXPECT_THROW(s.acquire(1, +1), Error);
}

TEST_F(Streamer, GradientCopiesLandIntactWhileComputeOverwritesLater) {
  CudaBackend backend;
  GradientCopier copier(backend);
  constexpr std::int64_t n = 1 << 20;
  DeviceBuffer grads = backend.allocate(DType::f32, n);
  Tensor g = grads.view(DType::f32, {n});
  gpu::PinnedBuffer host(n * sizeof(float));
  backend.fill(g, 3.0);
  copier.copy_to_host(g, host.data());  // ordered after the fill
  copier.order_compute_after_copies();
  backend.fill(g, -1.0);  // ordered after the copy has read g
  copier.wait();
  const float* h = static_cast<const float*>(host.data());
  EXPECT_EQ(std::vector<float>(h, h + n), std::vector<float>(n, 3.0f));
  EXPECT_EQ(download(backend, g), std::vector<float>(n, -1.0f));
}

}  // namespace
}  // namespace mlpo::testing
