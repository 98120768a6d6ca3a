// cuda_model_bench: forward + backward of a GPU-resident LLaMA-style model on the CUDA
// backend, and its model FLOP utilisation (MFU). One line per measurement.
//
//   build/release/bench/model/cuda_model_bench [--hidden 2048] [--layers 16] [--heads 16]
//       [--kv-heads 8] [--ffn 5632] [--vocab 32000] [--seq 2048] [--batch 4] [--steps 5]
//       [--peak-tflops 989]
//   build/release/bench/model/cuda_model_bench --model 1b [--seq 1024] [--batch 4] ...
//   ... [--attention gemm|fused]   the attention kernels (kernels/attention_path.hpp)
//
// Defaults: a ~0.9B-parameter model (LLaMA-like widths), 8192 tokens per step. --model takes
// a preset or a model file instead of the shape flags (--seq still sets the sequence length). FLOPs counted
// as in model_bench: 6 x matmul parameters per token + causal attention (6 x layers x T x
// hidden per token); the recomputed forward of activation checkpointing is not counted, so
// MFU = model FLOP/s / peak (H100/H200 SXM dense bf16 peak: 989 TFLOP/s).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/model/model_bench_util.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/thread_pool.hpp"
#include "executor/model/device_memory.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/transformer_model.hpp"
#include "kernels/cuda/cuda_backend.hpp"

using mlpo::bench::Clock;
using mlpo::bench::seconds_since;

int main(int argc, char** argv) try {
  CLI::App app{"forward+backward throughput and MFU of the CUDA backend on a GPU-resident model"};
  // vocab, hidden, layers, heads, kv heads, ffn, seq
  mlpo::model::ModelShape shape{32000, 2048, 16, 16, 8, 5632, 2048};
  int batch = 4, steps = 5;
  double peak_tflops = 989.0;
  std::string model_name, attention = mlpo::attention_path_name(mlpo::kDefaultAttentionPath);
  auto* model_flag = app.add_option("--model", model_name, "preset (1b, llama2-7b, ...) or model file");
  for (auto [flag, field] : {std::pair{"--hidden", &shape.hidden},
                             {"--layers", &shape.layers},
                             {"--heads", &shape.heads},
                             {"--kv-heads", &shape.kv_heads},
                             {"--ffn", &shape.ffn_hidden},
                             {"--vocab", &shape.vocab}})
    app.add_option(flag, *field)->excludes(model_flag);
  app.add_option("--seq", shape.seq_len);
  app.add_option("--batch", batch, "sequences per step");
  app.add_option("--steps", steps, "timed forward+backward steps");
  app.add_option("--peak-tflops", peak_tflops, "the GPU's dense bf16 peak, for MFU");
  app.add_option("--attention", attention, "attention kernels: gemm (tensor cores, cuBLASLt) or fused")
      ->check(CLI::IsMember({"gemm", "fused"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!model_name.empty()) {
    const int seq_len = shape.seq_len;
    shape = mlpo::model::shape_of(mlpo::load_model(model_name));
    if (app.count("--seq")) shape.seq_len = seq_len;
  }
  shape.validate();

  const mlpo::CudaAvailability gpu = mlpo::cuda_available();
  if (!gpu.available) throw mlpo::Error(gpu.reason);
  const mlpo::AttentionPath path = mlpo::parse_attention_path(attention, "--attention");
  mlpo::CudaBackend backend(0, mlpo::CudaBackendOptions{path});
  const mlpo::model::TransformerOptions options{batch, mlpo::DType::bf16};
  const std::int64_t N = static_cast<std::int64_t>(batch) * shape.seq_len;
  const mlpo::AttentionDims dims{batch, shape.seq_len, shape.heads, shape.kv_heads, shape.head_dim()};
  const mlpo::model::DeviceMemoryNeed need = mlpo::model::model_device_memory(
      shape, options, static_cast<std::int64_t>(mlpo::CudaBackend::scratch_bound(shape.hidden, dims, path)));
  const mlpo::gpu::DeviceMemory mem = mlpo::gpu::device_memory();
  mlpo::model::require_device_memory(need, mem.free, mem.total, backend.name());
  std::printf("device: %s; attention %s; needs %s\n", gpu.reason.c_str(), attention.c_str(),
              need.describe().c_str());

  mlpo::model::TransformerModel model(backend, shape, options);
  {
    mlpo::ThreadPool threads;
    const auto t0 = Clock::now();
    model.init_weights(1234, &threads);
    std::printf("init: %.1f s on %u threads\n", seconds_since(t0), threads.size());
  }
  const auto [tokens, targets] = mlpo::bench::random_tokens(N, shape.vocab);

  const auto& L = model.layout();
  const std::int64_t matrix_params = L.total() -
                                     static_cast<std::int64_t>(2 * shape.layers + 1) * shape.hidden -
                                     (shape.tied_embeddings ? 0 : L.embedding().numel());
  const double flops_per_token =
      6.0 * static_cast<double>(matrix_params) + 6.0 * shape.layers * shape.seq_len * shape.hidden;
  std::printf("model: %lld parameters (%lld in matmuls), batch %d x seq %d = %lld tokens/step\n",
              static_cast<long long>(L.total()), static_cast<long long>(matrix_params), batch, shape.seq_len,
              static_cast<long long>(N));

  model.forward(tokens, targets);  // warm-up: cuBLASLt heuristics, scratch growth
  model.backward();
  backend.synchronize();
  double fwd = 0, bwd = 0, loss = 0;
  for (int s = 0; s < steps; ++s) {
    auto t0 = Clock::now();
    loss = model.forward(tokens, targets);  // returns after the loss is on the host
    fwd += seconds_since(t0);
    t0 = Clock::now();
    model.backward();
    backend.synchronize();
    bwd += seconds_since(t0);
  }
  const double step = (fwd + bwd) / steps;
  const double tflops = static_cast<double>(N) / step * flops_per_token / 1e12;
  std::printf("forward %.1f ms, backward (incl. recompute) %.1f ms, step %.1f ms, loss %.3f\n",
              1e3 * fwd / steps, 1e3 * bwd / steps, 1e3 * step, loss);
  std::printf("throughput: %.0f tokens/s, %.1f model TFLOP/s, MFU %.1f%% of %.0f TFLOP/s\n",
              static_cast<double>(N) / step, tflops, 100.0 * tflops / peak_tflops, peak_tflops);
  return 0;
} catch (const mlpo::Error& e) {
  std::fprintf(stderr, "cuda_model_bench: %s\n", e.what());
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cuda_model_bench: internal error: %s\n", e.what());
  return 1;
}
