// cuda_attention_bench: causal attention alone on the CUDA backend, both paths (the tensor-core
// GEMMs of ops_attention_gemm.cu and the fused fp32 kernels of ops_attention.cu) on the same
// random bf16 inputs: forward and backward time (median of --reps, CUDA events around the
// op's launches on the compute stream), TFLOP/s and the largest difference between the two
// paths' outputs relative to the largest output (both must agree within bf16 rounding).
//
//   build/release/bench/model/cuda_attention_bench [--batch 4] [--seq 2048] [--heads 16]
//       [--kv-heads 8] [--head-dim 128] [--reps 10] [--paths gemm,fused]
//
// Defaults: the attention of cuda_model_bench's ~0.9B model. FLOPs counted for causal
// attention, as FlashAttention does: forward 4 B Hq T^2 D / 2 (QK^T and PV over the lower
// triangle), backward 2.5x that (five products, the recomputed QK^T included).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/ops.hpp"

namespace {

struct Inputs {
  std::int64_t B, T, Hq, Hkv, D;
  std::vector<mlpo::bf16> q, k, v, dout;
};

std::vector<mlpo::bf16> random_bf16(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<mlpo::bf16> x(static_cast<std::size_t>(n));
  for (auto& e : x) e = mlpo::float_to_bf16(normal(rng));
  return x;
}

struct Outputs {
  std::vector<std::vector<mlpo::bf16>> tensors;  // out, dq, dk, dv
  double forward_ms = 0, backward_ms = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of fn's launches on `stream`, by CUDA events.
template <class Fn>
double event_ms(cudaStream_t stream, Fn&& fn) {
  cudaEvent_t start, stop;
  mlpo::gpu::check(cudaEventCreate(&start), "cudaEventCreate");
  mlpo::gpu::check(cudaEventCreate(&stop), "cudaEventCreate");
  mlpo::gpu::check(cudaEventRecord(start, stream), "cudaEventRecord");
  fn();
  mlpo::gpu::check(cudaEventRecord(stop, stream), "cudaEventRecord");
  mlpo::gpu::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  mlpo::gpu::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

Outputs run_path(mlpo::AttentionPath path, const Inputs& in, int reps) {
  using mlpo::DType;
  mlpo::CudaBackend backend(0, mlpo::CudaBackendOptions{path});
  const std::int64_t nq = in.B * in.T * in.Hq * in.D, nkv = in.B * in.T * in.Hkv * in.D;
  auto upload = [&](const std::vector<mlpo::bf16>& x, mlpo::DeviceBuffer& buf) {
    buf = backend.allocate(DType::bf16, static_cast<std::int64_t>(x.size()));
    mlpo::Tensor t = buf.view(DType::bf16, {static_cast<std::int64_t>(x.size())});
    backend.copy_from_host(t, x.data());
  };
  mlpo::DeviceBuffer q, k, v, dout;
  upload(in.q, q);
  upload(in.k, k);
  upload(in.v, v);
  upload(in.dout, dout);
  mlpo::DeviceBuffer out = backend.allocate(DType::bf16, nq), dq = backend.allocate(DType::bf16, nq),
                     dk = backend.allocate(DType::bf16, nkv), dv = backend.allocate(DType::bf16, nkv),
                     lse = backend.allocate(DType::f32, in.B * in.Hq * in.T);
  const auto qshape = [&](const mlpo::DeviceBuffer& b) {
    return b.view(DType::bf16, {in.B, in.T, in.Hq, in.D});
  };
  const auto kvshape = [&](const mlpo::DeviceBuffer& b) {
    return b.view(DType::bf16, {in.B, in.T, in.Hkv, in.D});
  };
  const mlpo::Tensor tl = lse.view(DType::f32, {in.B, in.Hq, in.T});
  auto forward = [&] { backend.attention_forward(qshape(out), tl, qshape(q), kvshape(k), kvshape(v)); };
  auto backward = [&] {
    backend.attention_backward(qshape(dq), kvshape(dk), kvshape(dv), qshape(dout), qshape(q), kvshape(k),
                               kvshape(v), qshape(out), tl);
  };
  forward();  // warm-up: cuBLASLt plans, scratch growth
  backward();
  backend.synchronize();
  std::vector<double> f, b;
  for (int r = 0; r < reps; ++r) {
    f.push_back(event_ms(backend.compute_stream(), forward));
    b.push_back(event_ms(backend.compute_stream(), backward));
  }
  Outputs o;
  o.forward_ms = median(f);
  o.backward_ms = median(b);
  for (const auto* buf : {&out, &dq, &dk, &dv}) {
    const std::int64_t n = static_cast<std::int64_t>(buf->bytes() / 2);
    std::vector<mlpo::bf16> host(static_cast<std::size_t>(n));
    backend.copy_to_host(host.data(), buf->view(DType::bf16, {n}));
    o.tensors.push_back(std::move(host));
  }
  return o;
}

// The GEMM path's time split: its products alone (the same GEMMs, on the scratch a real call just
// filled) against the whole op; the rest is the row kernels and the head-major copies.
void gemm_breakdown(const Inputs& in, int reps, const Outputs& whole) {
  using mlpo::DType;
  mlpo::gpu::Stream stream;
  mlpo::gpu::DeviceScratch scratch;
  mlpo::gpu::Gemm gemm;
  const mlpo::gpu::OpContext ctx{stream.get(), scratch};
  std::vector<void*> owned;
  auto device = [&](const std::vector<mlpo::bf16>* host, std::int64_t n) {
    void* p = nullptr;
    mlpo::gpu::check(cudaMalloc(&p, static_cast<std::size_t>(n) * 2), "cudaMalloc");
    owned.push_back(p);
    if (host)
      mlpo::gpu::check(cudaMemcpy(p, host->data(), host->size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    return p;
  };
  const std::int64_t nq = in.B * in.T * in.Hq * in.D, nkv = in.B * in.T * in.Hkv * in.D;
  const mlpo::Tensor q(device(&in.q, nq), DType::bf16, {in.B, in.T, in.Hq, in.D}),
      k(device(&in.k, nkv), DType::bf16, {in.B, in.T, in.Hkv, in.D}),
      v(device(&in.v, nkv), DType::bf16, {in.B, in.T, in.Hkv, in.D}),
      dout(device(&in.dout, nq), DType::bf16, {in.B, in.T, in.Hq, in.D}),
      out(device(nullptr, nq), DType::bf16, {in.B, in.T, in.Hq, in.D}),
      dq(device(nullptr, nq), DType::bf16, {in.B, in.T, in.Hq, in.D}),
      dk(device(nullptr, nkv), DType::bf16, {in.B, in.T, in.Hkv, in.D}),
      dv(device(nullptr, nkv), DType::bf16, {in.B, in.T, in.Hkv, in.D}),
      lse(device(nullptr, 2 * in.B * in.Hq * in.T), DType::f32, {in.B, in.Hq, in.T});
  mlpo::gpu::attention_forward_gemm(ctx, gemm, out, lse, q, k, v);
  mlpo::gpu::attention_backward_gemm(ctx, gemm, dq, dk, dv, dout, q, k, v, out, lse);
  const mlpo::AttentionDims dims{in.B, in.T, in.Hq, in.Hkv, in.D};
  double ms[2];
  for (int backward = 0; backward < 2; ++backward) {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r)
      t.push_back(event_ms(stream.get(), [&] {
        mlpo::gpu::attention_gemm_products(ctx, gemm, dims, DType::bf16, backward == 1);
      }));
    ms[backward] = median(t);
  }
  const mlpo::AttentionBlocking b = mlpo::attention_blocking(dims);
  std::printf(
      "gemm  split: products alone forward %.3f ms (%.0f %%), backward %.3f ms (%.0f %%); "
      "row kernels and copies the rest (blocks of %lld rows, %lld pairs a call)\n",
      ms[0], 100.0 * ms[0] / whole.forward_ms, ms[1], 100.0 * ms[1] / whole.backward_ms,
      static_cast<long long>(b.rows), static_cast<long long>(b.pairs));
  for (void* p : owned) cudaFree(p);
}

// max |a - b| / max |b|
double relative_difference(const std::vector<mlpo::bf16>& a, const std::vector<mlpo::bf16>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = mlpo::bf16_to_float(a[i]), y = mlpo::bf16_to_float(b[i]);
    if (!std::isfinite(x)) return INFINITY;
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(y));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"causal attention alone on the CUDA backend: the GEMM path against the fused kernels"};
  Inputs in{4, 2048, 16, 8, 128, {}, {}, {}, {}};
  int reps = 10;
  std::vector<std::string> paths{"gemm", "fused"};
  app.add_option("--batch", in.B)->capture_default_str();
  app.add_option("--seq", in.T)->capture_default_str();
  app.add_option("--heads", in.Hq)->capture_default_str();
  app.add_option("--kv-heads", in.Hkv)->capture_default_str();
  app.add_option("--head-dim", in.D)->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions (the median is printed)")->capture_default_str();
  app.add_option("--paths", paths, "attention paths to time, the first is the one compared against")
      ->delimiter(',')
      ->check(CLI::IsMember({"gemm", "fused"}));
  CLI11_PARSE(app, argc, argv);
  if (in.B < 1 || in.T < 1 || in.Hq < 1 || in.Hkv < 1 || in.Hq % in.Hkv != 0 || in.D < 1 || reps < 1)
    throw mlpo::Error("shape: need positive sizes with --heads a multiple of --kv-heads, and --reps >= 1");
  const mlpo::CudaAvailability gpu = mlpo::cuda_available();
  if (!gpu.available) throw mlpo::Error(gpu.reason);
  in.q = random_bf16(in.B * in.T * in.Hq * in.D, 1);
  in.k = random_bf16(in.B * in.T * in.Hkv * in.D, 2);
  in.v = random_bf16(in.B * in.T * in.Hkv * in.D, 3);
  in.dout = random_bf16(in.B * in.T * in.Hq * in.D, 4);
  const double forward_flops =
      2.0 * static_cast<double>(in.B * in.Hq * in.D) * static_cast<double>(in.T * in.T);
  std::printf("device: %s; attention B=%lld T=%lld Hq=%lld Hkv=%lld D=%lld, bf16, causal\n",
              gpu.reason.c_str(), static_cast<long long>(in.B), static_cast<long long>(in.T),
              static_cast<long long>(in.Hq), static_cast<long long>(in.Hkv), static_cast<long long>(in.D));
  std::vector<Outputs> results;
  for (const std::string& p : paths) {
    results.push_back(run_path(mlpo::parse_attention_path(p, "--paths"), in, reps));
    const Outputs& o = results.back();
    std::printf("%-5s forward %8.3f ms %6.1f TFLOP/s   backward %8.3f ms %6.1f TFLOP/s", p.c_str(),
                o.forward_ms, forward_flops / o.forward_ms / 1e9, o.backward_ms,
                2.5 * forward_flops / o.backward_ms / 1e9);
    if (results.size() > 1) {
      const char* names[] = {"out", "dq", "dk", "dv"};
      std::printf("   vs %s:", paths.front().c_str());
      for (std::size_t i = 0; i < 4; ++i)
        std::printf(" %s %.1e", names[i], relative_difference(o.tensors[i], results.front().tensors[i]));
    }
    std::printf("\n");
    if (p == "gemm") gemm_breakdown(in, reps, results.back());
  }
  return 0;
} catch (const mlpo::Error& e) {
  std::fprintf(stderr, "cuda_attention_bench: %s\n", e.what());
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cuda_attention_bench: internal error: %s\n", e.what());
  return 1;
}
