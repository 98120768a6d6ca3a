// model_bench: forward + backward throughput of the CPU backend on a small LLaMA-style model,
// and the GEMM rate behind it. Prints one line per measurement.
//
//   build/release/bench/model/model_bench [--layers 12] [--batch 4] [--steps 3] [--threads 0]
//                                         [--blas-threads 0] [--model tiny|small|FILE]
//
// Without --model the model is a small byte-level one (hidden 384, 6 heads, 2 kv heads, ffn
// 1024, seq 256, 12 layers: ~19M parameters); --model takes a preset or a model file instead
// (--layers, when given, still sets the layer count).
//
// Model FLOPs are counted the usual way, 6 * (non-embedding matrix parameters + lm_head) per
// token plus causal attention (6 * layers * T * hidden per token, half of the full square);
// the recomputed forward of activation checkpointing is NOT counted, so the GFLOP/s here is
// the useful rate ("model FLOP/s"), not the hardware's.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/model/model_bench_util.hpp"
#include "core/model_spec.hpp"
#include "core/thread_pool.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/transformer_model.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace {

using mlpo::bench::Clock;
using mlpo::bench::seconds_since;

// Times out = x @ w^T for x [N, I], w [O, I] in the given storage type; returns GFLOP/s.
double gemm_rate(mlpo::Backend& backend, mlpo::DType type, std::int64_t N, std::int64_t I, std::int64_t O) {
  auto x = backend.allocate(type, N * I), w = backend.allocate(type, O * I),
       out = backend.allocate(type, N * O);
  mlpo::Tensor tx = x.view(type, {N, I}), tw = w.view(type, {O, I}), to = out.view(type, {N, O});
  backend.fill(tx, 0.5);
  backend.fill(tw, 0.25);
  backend.linear_forward(to, tx, tw);  // warm-up
  int reps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < 1.0 || reps < 3) {
    backend.linear_forward(to, tx, tw);
    ++reps;
  }
  return 2.0 * N * I * O * reps / seconds_since(t0) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"forward+backward throughput of the CPU backend on a small model"};
  int layers = 12, batch = 4, steps = 3;
  unsigned threads = 0, blas_threads = 0;
  app.add_option("--layers", layers, "decoder layers (small = 12, ~19M parameters)");
  app.add_option("--batch", batch, "sequences per step (of 256 tokens)");
  app.add_option("--steps", steps, "timed forward+backward steps");
  app.add_option("--threads", threads, "ThreadPool threads (0 = all cores)");
  app.add_option("--blas-threads", blas_threads, "OpenBLAS threads (0 = all cores)");
  std::string model_name;
  app.add_option("--model", model_name, "preset (tiny, small, ...) or model file instead of the default");
  CLI11_PARSE(app, argc, argv);

  mlpo::model::ModelShape shape;  // byte-level vocabulary
  if (model_name.empty()) {
    shape = {256, 384, layers, 6, 2, 1024, 256};  // vocab, hidden, layers, heads, kv heads, ffn, seq
  } else {
    shape = mlpo::model::shape_of(mlpo::load_model(model_name));
    if (app.count("--layers")) shape.layers = layers;
  }
  shape.validate();

  mlpo::ThreadPool pool(threads);
  mlpo::CpuBackend backend(pool, {blas_threads, mlpo::cpu::GemmPath::blas});
  std::printf("machine: %u pool threads, %u OpenBLAS threads\n", pool.size(), backend.blas_threads());

  const std::int64_t N = static_cast<std::int64_t>(batch) * shape.seq_len;
  std::printf("gemm f32  [%lld x %d] @ [%d x %d]^T: %.1f GFLOP/s\n", static_cast<long long>(N), shape.hidden,
              shape.ffn_hidden, shape.hidden,
              gemm_rate(backend, mlpo::DType::f32, N, shape.hidden, shape.ffn_hidden));
  std::printf("gemm bf16 [%lld x %d] @ [%d x %d]^T: %.1f GFLOP/s (incl. bf16<->f32 staging)\n",
              static_cast<long long>(N), shape.hidden, shape.ffn_hidden, shape.hidden,
              gemm_rate(backend, mlpo::DType::bf16, N, shape.hidden, shape.ffn_hidden));

  mlpo::model::TransformerModel model(backend, shape, {batch, mlpo::DType::bf16});
  model.init_weights(1234);
  const auto [tokens, targets] = mlpo::bench::random_tokens(N, shape.vocab);

  const auto& L = model.layout();
  const std::int64_t matrix_params = L.total() - L.embedding().numel() * (shape.tied_embeddings ? 0 : 1) -
                                     static_cast<std::int64_t>(2 * shape.layers + 1) * shape.hidden +
                                     (shape.tied_embeddings ? L.embedding().numel() : 0);
  const double flops_per_token = 6.0 * matrix_params + 6.0 * shape.layers * shape.seq_len * shape.hidden;
  std::printf("model: %lld parameters (%lld in matmuls), batch %d x seq %d = %lld tokens/step\n",
              static_cast<long long>(L.total()), static_cast<long long>(matrix_params), batch, shape.seq_len,
              static_cast<long long>(N));

  model.forward(tokens, targets);  // warm-up
  model.backward();
  double fwd = 0, bwd = 0, loss = 0;
  for (int s = 0; s < steps; ++s) {
    auto t0 = Clock::now();
    loss = model.forward(tokens, targets);
    fwd += seconds_since(t0);
    t0 = Clock::now();
    model.backward();
    bwd += seconds_since(t0);
  }
  const double step = (fwd + bwd) / steps;
  std::printf("forward %.1f ms, backward (incl. recompute) %.1f ms, step %.1f ms, loss %.3f\n",
              1e3 * fwd / steps, 1e3 * bwd / steps, 1e3 * step, loss);
  std::printf("throughput: %.0f tokens/s, %.1f model GFLOP/s\n", N / step, N / step * flops_per_token / 1e9);
  return 0;
}
