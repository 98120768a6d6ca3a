// The whole model, TransformerModel over CudaBackend against TransformerModel over CpuBackend:
// same weights, same batch, loss and every gradient tensor compared. This checks what the op
// tests cannot: that the CUDA ops compose (aliasing in place, stream order, scratch reuse
// between ops, the checkpoint recomputation) into the same training step.
//
// Tolerances: f32 storage differs only by summation order: loss 1e-5 relative, gradients 1e-3
// relative L2 per tensor. bf16 storage rounds every stored activation; each backend is within
// ~1.5% (relative L2) of the f64 model on this configuration (tests/executor/model), so two of them are
// within 5% of each other, and the loss within 2%.
#include <cmath>

#include "tests/kernels/cuda/cuda_test_util.hpp"
#include "tests/executor/model/model_test_util.hpp"

namespace mlpo::testing {
namespace {

using Model = CudaTest;
constexpr int kBatch = 2;

std::vector<double> download_gradients(Backend& backend, const model::TransformerModel& m) {
  std::vector<float> g(static_cast<std::size_t>(m.gradients().numel()));
  backend.copy_to_host(g.data(), m.gradients());
  return {g.begin(), g.end()};
}

double relative_l2(const std::vector<double>& got, const std::vector<double>& want, std::int64_t offset,
                   std::int64_t count) {
  double num = 0, den = 0;
  for (std::int64_t i = offset; i < offset + count; ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void compare_models_on(AttentionPath path, DType storage, bool tied, double loss_tol, double grad_tol) {
  const model::ModelShape shape = tiny_shape(tied);
  ThreadPool pool(2);
  CpuBackend cpu(pool, CpuBackendOptions{2, cpu::GemmPath::blas});
  CudaBackend gpu(0, {path});
  model::TransformerModel on_cpu(cpu, shape, {kBatch, storage}), on_gpu(gpu, shape, {kBatch, storage});
  std::vector<float> w = spread_weights(on_cpu.layout(), 31, 5.0f);
  on_cpu.load_weights(w);
  on_gpu.load_weights(w);
  // Two micro-batches: gradients accumulate across them on both.
  for (std::uint64_t seed : {32u, 33u}) {
    const Batch b = random_batch(shape, kBatch, seed);
    const double loss_cpu = on_cpu.forward(b.tokens, b.targets),
                 loss_gpu = on_gpu.forward(b.tokens, b.targets);
    EXPECT_NEAR(loss_gpu, loss_cpu, loss_tol * loss_cpu) << "micro-batch " << seed;
    on_cpu.backward(0.5f);
    on_gpu.backward(0.5f);
  }
  const auto g_cpu = download_gradients(cpu, on_cpu), g_gpu = download_gradients(gpu, on_gpu);
  for (const model::ParameterEntry& e : on_cpu.layout().entries())
    EXPECT_LT(relative_l2(g_gpu, g_cpu, e.offset, e.numel()), grad_tol) << e.name;
}

void compare_models(DType storage, bool tied, double loss_tol, double grad_tol) {
  for (AttentionPath path : kAttentionPaths) {
    SCOPED_TRACE(std::string("attention ") + attention_path_name(path));
    compare_models_on(path, storage, tied, loss_tol, grad_tol);
  }
}

TEST_F(Model, F32ForwardAndBackwardMatchCpu) { compare_models(DType::f32, false, 1e-5, 1e-3); }
TEST_F(Model, Bf16ForwardAndBackwardMatchCpu) { compare_models(DType::bf16, false, 0.02, 0.05); }
TEST_F(Model, TiedEmbeddingsMatchCpu) { compare_models(DType::bf16, true, 0.02, 0.05); }

void expect_repeated_steps_identical(AttentionPath path) {
  const model::ModelShape shape = tiny_shape();
  CudaBackend gpu(0, {path});
  model::TransformerModel m(gpu, shape, {kBatch, DType::bf16});
  m.init_weights(41);
  const Batch b = random_batch(shape, kBatch, 42);
  std::vector<double> first;
  double first_loss = 0;
  for (int run = 0; run < 2; ++run) {
    m.zero_gradients();
    const double loss = m.forward(b.tokens, b.targets);
    m.backward();
    const auto g = download_gradients(gpu, m);
    if (run == 0) {
      first = g;
      first_loss = loss;
    } else {
      EXPECT_EQ(loss, first_loss);
      EXPECT_EQ(g, first);
    }
  }
}

TEST_F(Model, RepeatedStepsAreBitwiseIdentical) {
  for (AttentionPath path : kAttentionPaths) {
    SCOPED_TRACE(attention_path_name(path));
    expect_repeated_steps_identical(path);
  }
}

TEST_F(Model, OutOfRangeTokenIsAnErrorNotACrash) {
  const model::ModelShape shape = tiny_shape();
  CudaBackend gpu;
  model::TransformerModel m(gpu, shape, {1, DType::bf16});
  m.init_weights(1);
  Batch b = random_batch(shape, 1, 2);
  b.tokens[3] = shape.vocab;
  EXPECT_THROW(m.forward(b.tokens, b.targets), Error);
}

}  // namespace
}  // namespace mlpo::testing
