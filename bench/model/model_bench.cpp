// model_bench: forward + backward throughput of the CPU backend on a small LLaMA-style model,
// and the GEMM rate behind it. Prints one line per measurement.
//
//   build/release/bench/model/model_bench [--layers 12] [--batch 4] [--steps 3] [--threads 0]
//                                         [--blas-threads 0] [--model tiny|small|FILE] [--seq N]
//                                         [--breakdown]
//
// Without --model the model is a small byte-level one (hidden 384, 6 heads, 2 kv heads, ffn
// 1024, seq 256, 12 layers: ~19M parameters); --model takes a preset or a model file instead
// (--layers, when given, still sets the layer count).
//
// Model FLOPs are counted the usual way, 6 * (non-embedding matrix parameters + lm_head) per
// token plus causal attention (6 * layers * T * hidden per token, half of the full square);
// the recomputed forward of activation checkpointing is NOT counted, so the GFLOP/s here is
// the useful rate ("model FLOP/s"), not the hardware's.
//
// "GEMM rate at the layer shapes" is the CPU figure mlpo-profile measures (profiles/internal/host_probe.cpp:
// bf16 linear_forward over profiles::transformer_gemm_shapes of this model at this step's
// tokens), measured here with the same backend settings, so the printed ratio compares the
// model's rate with the profile's at the same shapes. --breakdown wraps the backend in
// OpTimerBackend and prints where forward and backward time goes per op class, with the linear
// layers split into bf16<->fp32 staging and their three GEMMs.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/model/model_bench_util.hpp"
#include "bench/model/op_timer_backend.hpp"
#include "core/model_spec.hpp"
#include "core/thread_pool.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/transformer_model.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "profiles/gemm_shapes.hpp"

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

// The profile's CPU GEMM figure at `tokens` (see the header): GFLOP/s over the layer's shapes.
double layer_gemm_rate(mlpo::Backend& backend, const mlpo::ModelSpec& model, std::int64_t tokens) {
  const auto shapes = mlpo::profiles::transformer_gemm_shapes(model, tokens);
  const mlpo::DType bf = mlpo::DType::bf16;
  std::vector<mlpo::DeviceBuffer> owned;
  std::vector<mlpo::Tensor> x, w, out;
  double flops = 0;
  for (const auto& s : shapes) {
    owned.push_back(backend.allocate(bf, s.m * s.k));
    x.push_back(owned.back().view(bf, {s.m, s.k}));
    owned.push_back(backend.allocate(bf, s.n * s.k));
    w.push_back(owned.back().view(bf, {s.n, s.k}));
    owned.push_back(backend.allocate(bf, s.m * s.n));
    out.push_back(owned.back().view(bf, {s.m, s.n}));
    backend.fill(x.back(), 0.01);
    backend.fill(w.back(), 0.02);
    flops += s.flops() * s.per_layer;
  }
  auto layer = [&] {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      for (int r = 0; r < shapes[i].per_layer; ++r) backend.linear_forward(out[i], x[i], w[i]);
  };
  layer();  // warm-up
  int reps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < 1.0 || reps < 3) {
    layer();
    ++reps;
  }
  return flops * reps / seconds_since(t0) / 1e9;
}

void print_breakdown(const mlpo::bench::OpTimerBackend& timer, const mlpo::cpu::LinearStageTimes& lin,
                     int steps) {
  const double ms = 1e3 / steps;
  for (const auto& [pass, ops] : timer.seconds()) {
    std::printf("breakdown %s (ms/step):", pass.c_str());
    for (const auto& [op, s] : ops) std::printf(" %s %.1f", op.c_str(), s * ms);
    std::printf("\n");
  }
  std::printf(
      "breakdown linear stages (ms/step, both passes): bf16<->f32 staging %.1f, gemm fwd %.1f, "
      "gemm bwd dx %.1f, gemm bwd dw %.1f\n",
      lin.convert_s * ms, lin.forward_s * ms, lin.backward_dx_s * ms, lin.backward_dw_s * ms);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"forward+backward throughput of the CPU backend on a small model"};
  int layers = 12, batch = 4, steps = 3, seq = 0;
  unsigned threads = 0, blas_threads = 0;
  bool breakdown = false;
  app.add_option("--layers", layers, "decoder layers (small = 12, ~19M parameters)");
  app.add_option("--batch", batch, "sequences per step (of 256 tokens)");
  app.add_option("--steps", steps, "timed forward+backward steps");
  app.add_option("--threads", threads, "ThreadPool threads (0 = all cores)");
  app.add_option("--blas-threads", blas_threads, "column blocks per GEMM (0 = all cores)");
  std::string model_name;
  app.add_option("--model", model_name, "preset (tiny, small, ...) or model file instead of the default");
  app.add_option("--seq", seq, "sequence length (default: the model's)");
  app.add_flag("--breakdown", breakdown, "print forward/backward time per op class");
  CLI11_PARSE(app, argc, argv);

  mlpo::model::ModelShape shape;  // byte-level vocabulary
  if (model_name.empty()) {
    shape = {256, 384, layers, 6, 2, 1024, 256};  // vocab, hidden, layers, heads, kv heads, ffn, seq
  } else {
    shape = mlpo::model::shape_of(mlpo::load_model(model_name));
    if (app.count("--layers")) shape.layers = layers;
  }
  if (seq > 0) shape.seq_len = seq;
  shape.validate();

  mlpo::ThreadPool pool(threads);
  mlpo::cpu::LinearStageTimes linear_times;
  mlpo::CpuBackend cpu(pool, {blas_threads, mlpo::cpu::GemmPath::blas});
  mlpo::CpuBackend timed_cpu(pool, {blas_threads, mlpo::cpu::GemmPath::blas, &linear_times});
  mlpo::bench::OpTimerBackend timer(timed_cpu);
  mlpo::Backend& backend = breakdown ? static_cast<mlpo::Backend&>(timer) : cpu;
  std::printf("machine: %u pool threads, GEMMs in %u column blocks (single-threaded OpenBLAS on the pool)\n",
              pool.size(), cpu.blas_threads());

  const std::int64_t N = static_cast<std::int64_t>(batch) * shape.seq_len;
  std::printf("gemm f32  [%lld x %d] @ [%d x %d]^T: %.1f GFLOP/s\n", static_cast<long long>(N), shape.hidden,
              shape.ffn_hidden, shape.hidden,
              gemm_rate(backend, mlpo::DType::f32, N, shape.hidden, shape.ffn_hidden));
  std::printf("gemm bf16 [%lld x %d] @ [%d x %d]^T: %.1f GFLOP/s (incl. bf16<->f32 staging)\n",
              static_cast<long long>(N), shape.hidden, shape.ffn_hidden, shape.hidden,
              gemm_rate(backend, mlpo::DType::bf16, N, shape.hidden, shape.ffn_hidden));
  mlpo::ModelSpec spec;
  spec.hidden = shape.hidden;
  spec.heads = shape.heads;
  spec.kv_heads = shape.kv_heads;
  spec.ffn_hidden = shape.ffn_hidden;
  const double profile_rate = layer_gemm_rate(cpu, spec, N);
  std::printf("GEMM rate at the layer shapes (mlpo-profile's CPU figure, %lld tokens): %.1f GFLOP/s\n",
              static_cast<long long>(N), profile_rate);

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
  timer.reset();
  linear_times = {};
  double fwd = 0, bwd = 0, loss = 0;
  for (int s = 0; s < steps; ++s) {
    auto t0 = Clock::now();
    timer.set_pass("forward");
    loss = model.forward(tokens, targets);
    fwd += seconds_since(t0);
    t0 = Clock::now();
    timer.set_pass("backward");
    model.backward();
    bwd += seconds_since(t0);
  }
  const double step = (fwd + bwd) / steps;
  std::printf("forward %.1f ms, backward (incl. recompute) %.1f ms, step %.1f ms, loss %.3f\n",
              1e3 * fwd / steps, 1e3 * bwd / steps, 1e3 * step, loss);
  const double model_rate = N / step * flops_per_token / 1e9;
  std::printf("throughput: %.0f tokens/s, %.1f model GFLOP/s = %.2f x the GEMM rate at the layer shapes\n",
              N / step, model_rate, model_rate / profile_rate);
  if (breakdown) print_breakdown(timer, linear_times, steps);
  return 0;
}
