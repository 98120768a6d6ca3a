// probe_gpus() with the CUDA runtime and cuBLASLt (see gpu_probe.hpp for what is measured).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "profiles/gemm_shapes.hpp"
#include "profiles/gpu_probe.hpp"
#include "core/interrupt.hpp"
#include "profiles/internal/sample_stats.hpp"

namespace mlpo::profiles {

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("GPU probe: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("GPU probe: ") + what + ": cuBLASLt status " +
                std::to_string(static_cast<int>(s)) + " (" + cublasLtGetStatusString(s) + ")");
}

// ---- RAII owners of CUDA resources ----

class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) {
    check(cudaMalloc(&data_, bytes), "cudaMalloc");
    // bf16 0x3c3c ~ 0.0115: finite, not zero. The legacy stream's memset does not order itself
    // before work on the probe's non-blocking streams: wait for it here.
    check(cudaMemset(data_, 0x3c, bytes), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemset");
  }
  ~DeviceMemory() { cudaFree(data_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

class PinnedHostMemory {
 public:
  explicit PinnedHostMemory(std::size_t bytes) {
    check(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  }
  ~PinnedHostMemory() { cudaFreeHost(data_); }
  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

class CudaStream {
 public:
  CudaStream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  CudaEvent() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Seconds per launch of `launch` (enqueued `iterations` times on `stream`), by CUDA events.
double event_seconds(cudaStream_t stream, int iterations, const std::function<void()>& launch) {
  CudaEvent start, stop;
  check(cudaEventRecord(start.get(), stream), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) launch();
  check(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
  return static_cast<double>(ms) / 1e3 / iterations;
}

// Owners of cuBLASLt descriptors, so that a constructor that throws half-way (no algorithm for a
// shape) frees what it made.
struct MatmulDesc {
  cublasLtMatmulDesc_t get = nullptr;
  MatmulDesc() {
    check(cublasLtMatmulDescCreate(&get, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(get); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
};
struct MatrixLayout {
  cublasLtMatrixLayout_t get = nullptr;
  MatrixLayout(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    check(cublasLtMatrixLayoutCreate(&get, CUDA_R_16BF, static_cast<std::uint64_t>(rows),
                                     static_cast<std::uint64_t>(cols), ld),
          "cublasLtMatrixLayoutCreate");
  }
  ~MatrixLayout() { cublasLtMatrixLayoutDestroy(get); }
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
};
struct MatmulPreference {
  cublasLtMatmulPreference_t get = nullptr;
  MatmulPreference() { check(cublasLtMatmulPreferenceCreate(&get), "cublasLtMatmulPreferenceCreate"); }
  ~MatmulPreference() { cublasLtMatmulPreferenceDestroy(get); }
  MatmulPreference(const MatmulPreference&) = delete;
  MatmulPreference& operator=(const MatmulPreference&) = delete;
};

// One bf16 GEMM out[m,n] = x[m,k] @ w[n,k]^T through cuBLASLt. cuBLAS is column-major, so it
// computes out^T[n,m] = (w as k x n, transposed) * (x as k x m): A = w (op T), B = x (op N).
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, const GemmShape& shape, void* workspace, std::size_t workspace_bytes)
      : handle_(handle),
        workspace_(workspace),
        workspace_bytes_(workspace_bytes),
        x_(static_cast<std::size_t>(shape.m * shape.k) * 2),
        w_(static_cast<std::size_t>(shape.n * shape.k) * 2),
        out_(static_cast<std::size_t>(shape.m * shape.n) * 2),
        a_(shape.k, shape.n, shape.k),
        b_(shape.k, shape.m, shape.k),
        c_(shape.n, shape.m, shape.n) {
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    check(
        cublasLtMatmulDescSetAttribute(desc_.get, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
        "TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc_.get, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep),
          "TRANSB");
    MatmulPreference preference;
    const std::uint64_t max_workspace = workspace_bytes;
    check(cublasLtMatmulPreferenceSetAttribute(preference.get, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &max_workspace, sizeof max_workspace),
          "workspace preference");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(handle_, desc_.get, a_.get, b_.get, c_.get, c_.get, preference.get,
                                         1, &result, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw Error("GPU probe: cuBLASLt has no bf16 algorithm for GEMM '" + shape.name + "'");
    algo_ = result.algo;
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void run(cudaStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasLtMatmul(handle_, desc_.get, &alpha, w_.get(), a_.get, x_.get(), b_.get, &beta, out_.get(),
                         c_.get, out_.get(), c_.get, &algo_, workspace_, workspace_bytes_, stream),
          "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t handle_;
  void* workspace_;
  std::size_t workspace_bytes_;
  DeviceMemory x_, w_, out_;
  MatmulDesc desc_;
  MatrixLayout a_, b_, c_;
  cublasLtMatmulAlgo_t algo_{};
};

class LtHandle {
 public:
  LtHandle() { check(cublasLtCreate(&handle_), "cublasLtCreate"); }
  ~LtHandle() { cublasLtDestroy(handle_); }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

constexpr std::size_t kWorkspace = 32 * MiB;
constexpr int kGemmIterations = 20;
constexpr int kCopyIterations = 4;

// The model's layer GEMMs on the current device: per shape TFLOP/s, and per repetition the
// layer aggregate (weighted FLOPs / weighted time).
struct LayerGemms {
  std::vector<GemmShape> shapes;
  LtHandle handle;
  DeviceMemory workspace{kWorkspace};
  std::vector<std::unique_ptr<LtGemm>> gemms;

  LayerGemms(const ModelSpec& model, std::int64_t tokens) : shapes(transformer_gemm_shapes(model, tokens)) {
    for (const GemmShape& s : shapes)
      gemms.push_back(std::make_unique<LtGemm>(handle.get(), s, workspace.get(), kWorkspace));
  }
  double layer_flops() const {
    double f = 0;
    for (const GemmShape& s : shapes) f += s.flops() * s.per_layer;
    return f;
  }
  // Runs one layer's GEMMs `iterations` times (no timing).
  void launch_layer(cudaStream_t stream, int iterations) {
    for (int i = 0; i < iterations; ++i)
      for (std::size_t g = 0; g < gemms.size(); ++g)
        for (int r = 0; r < shapes[g].per_layer; ++r) gemms[g]->run(stream);
  }
};

GpuProfile probe_one(int device, const GpuProbeOptions& options, const Diagnostics& diagnostics) {
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  GpuProfile g;
  g.model = prop.name;
  g.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  g.sm_count = prop.multiProcessorCount;
  const int reps = options.repetitions;
  const std::size_t bytes = options.transfer_bytes;
  CudaStream stream, second;

  diagnostics.progress("gpu", "gpu " + std::to_string(device) + " (" + g.model + "): bf16 GEMM, cuBLASLt");
  {
    LayerGemms layer(options.model, options.tokens);
    std::vector<std::vector<double>> per_shape(layer.shapes.size());
    std::vector<double> aggregate;
    layer.launch_layer(stream.get(), 2);  // warm-up (algorithm selection, clocks)
    for (int rep = 0; rep < reps; ++rep) {
      throw_if_interrupted();
      double layer_seconds = 0;
      for (std::size_t i = 0; i < layer.shapes.size(); ++i) {
        const double s =
            event_seconds(stream.get(), kGemmIterations, [&] { layer.gemms[i]->run(stream.get()); });
        per_shape[i].push_back(layer.shapes[i].flops() / s / 1e12);
        layer_seconds += s * layer.shapes[i].per_layer;
      }
      aggregate.push_back(layer.layer_flops() / layer_seconds / 1e12);
    }
    for (std::size_t i = 0; i < layer.shapes.size(); ++i) {
      const GemmShape& s = layer.shapes[i];
      g.gemm.push_back(
          {s.name, s.m, s.n, s.k, summarize(per_shape[i], 2 * (s.m * s.k + s.n * s.k + s.m * s.n))});
    }
    g.bf16_tflops = summarize(aggregate, 0);
  }

  DeviceMemory src(bytes), dst(bytes);
  PinnedHostMemory host_in(bytes), host_out(bytes);
  auto copy_rate = [&](cudaMemcpyKind kind, void* to, const void* from, double bytes_counted) {
    std::vector<double> rates;
    check(cudaMemcpyAsync(to, from, bytes, kind, stream.get()), "cudaMemcpyAsync");  // warm-up
    for (int rep = 0; rep < reps; ++rep) {
      throw_if_interrupted();
      const double s = event_seconds(stream.get(), kCopyIterations, [&] {
        check(cudaMemcpyAsync(to, from, bytes, kind, stream.get()), "cudaMemcpyAsync");
      });
      rates.push_back(bytes_counted / s / GB);
    }
    return summarize(rates, static_cast<std::int64_t>(bytes));
  };
  diagnostics.progress("gpu", "gpu " + std::to_string(device) + ": HBM device-to-device copy");
  g.hbm_gbps = copy_rate(cudaMemcpyDeviceToDevice, dst.get(), src.get(), 2.0 * static_cast<double>(bytes));
  diagnostics.progress("gpu", "gpu " + std::to_string(device) + ": pinned H2D, D2H, both at once");
  g.h2d_gbps = copy_rate(cudaMemcpyHostToDevice, dst.get(), host_in.get(), static_cast<double>(bytes));
  g.d2h_gbps = copy_rate(cudaMemcpyDeviceToHost, host_out.get(), src.get(), static_cast<double>(bytes));
  std::vector<double> both;
  for (int rep = 0; rep < reps; ++rep) {
    throw_if_interrupted();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const auto t0 = Clock::now();
    for (int i = 0; i < kCopyIterations; ++i) {
      check(cudaMemcpyAsync(dst.get(), host_in.get(), bytes, cudaMemcpyHostToDevice, stream.get()),
            "cudaMemcpyAsync");
      check(cudaMemcpyAsync(host_out.get(), src.get(), bytes, cudaMemcpyDeviceToHost, second.get()),
            "cudaMemcpyAsync");
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    both.push_back(2.0 * kCopyIterations * static_cast<double>(bytes) / s / GB);
  }
  g.bidirectional_gbps = summarize(both, static_cast<std::int64_t>(2 * bytes));
  return g;
}

// `work(device)` prepares a device and returns {launch, units of work per launch}; every device
// then launches at once, per repetition, and the aggregate rate is all units / slowest time.
Measurement all_at_once(const std::vector<int>& devices, int reps, double unit,
                        const std::function<std::pair<std::function<void()>, double>(int)>& work) {
  const std::size_t n = devices.size();
  std::barrier sync(static_cast<std::ptrdiff_t>(n));
  std::vector<double> seconds(n * static_cast<std::size_t>(reps));
  std::vector<double> units(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      std::pair<std::function<void()>, double> job;
      try {
        check(cudaSetDevice(devices[i]), "cudaSetDevice");
        job = work(devices[i]);
        units[i] = job.second;
        job.first();  // warm-up
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      } catch (...) {
        errors[i] = std::current_exception();
      }
      for (int rep = 0; rep < reps; ++rep) {
        sync.arrive_and_wait();
        const auto t0 = Clock::now();
        if (!errors[i]) {
          try {
            job.first();
            check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
          } catch (...) {
            errors[i] = std::current_exception();
          }
        }
        seconds[static_cast<std::size_t>(rep) * n + i] =
            std::chrono::duration<double>(Clock::now() - t0).count();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  double total = 0;
  for (double u : units) total += u;
  std::vector<double> rates;
  for (int rep = 0; rep < reps; ++rep) {
    double slowest = 0;
    for (std::size_t i = 0; i < n; ++i)
      slowest = std::max(slowest, seconds[static_cast<std::size_t>(rep) * n + i]);
    rates.push_back(total / slowest / unit);
  }
  return summarize(rates, 0);
}

void probe_all_at_once(GpuProfile& g, const std::vector<int>& devices, const GpuProbeOptions& options,
                       const Diagnostics& diagnostics) {
  const std::size_t bytes = options.transfer_bytes;
  diagnostics.progress("gpu", std::to_string(devices.size()) + " x " + g.model + " at once: GEMM, H2D, D2H");
  // Resources live in per-device holders kept alive until the measurement ends.
  std::vector<std::unique_ptr<LayerGemms>> layers(devices.size());
  std::vector<std::unique_ptr<CudaStream>> streams(devices.size());
  std::vector<std::unique_ptr<DeviceMemory>> device_buffers(devices.size());
  std::vector<std::unique_ptr<PinnedHostMemory>> host_buffers(devices.size());
  auto index_of = [&](int device) {
    return static_cast<std::size_t>(std::find(devices.begin(), devices.end(), device) - devices.begin());
  };

  g.all_bf16_tflops = all_at_once(devices, options.repetitions, 1e12, [&](int d) {
    const std::size_t i = index_of(d);
    layers[i] = std::make_unique<LayerGemms>(options.model, options.tokens);
    streams[i] = std::make_unique<CudaStream>();
    LayerGemms* layer = layers[i].get();
    cudaStream_t s = streams[i]->get();
    return std::make_pair(std::function<void()>([layer, s] { layer->launch_layer(s, kGemmIterations); }),
                          layer->layer_flops() * kGemmIterations);
  });
  layers.clear();
  for (cudaMemcpyKind kind : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
    Measurement m = all_at_once(devices, options.repetitions, GB, [&](int d) {
      const std::size_t i = index_of(d);
      device_buffers[i] = std::make_unique<DeviceMemory>(bytes);
      host_buffers[i] = std::make_unique<PinnedHostMemory>(bytes);
      void* dev = device_buffers[i]->get();
      void* host = host_buffers[i]->get();
      cudaStream_t s = streams[i]->get();
      return std::make_pair(std::function<void()>([=] {
                              for (int k = 0; k < kCopyIterations; ++k) {
                                if (kind == cudaMemcpyHostToDevice)
                                  check(cudaMemcpyAsync(dev, host, bytes, kind, s), "cudaMemcpyAsync");
                                else
                                  check(cudaMemcpyAsync(host, dev, bytes, kind, s), "cudaMemcpyAsync");
                              }
                            }),
                            static_cast<double>(bytes) * kCopyIterations);
    });
    (kind == cudaMemcpyHostToDevice ? g.all_h2d_gbps : g.all_d2h_gbps) = m;
    for (auto& b : device_buffers) b.reset();
    for (auto& b : host_buffers) b.reset();
  }
}

}  // namespace

GpuProbeResult probe_gpus(const GpuProbeOptions& options, const Diagnostics& diagnostics) {
  GpuProbeResult result;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    result.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
    return result;
  }
  if (count == 0) {
    result.reason = "no CUDA device (cudaGetDeviceCount returned 0)";
    return result;
  }
  std::map<std::string, std::vector<int>> by_model;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    by_model[prop.name].push_back(d);
  }
  for (const auto& [model, devices] : by_model) {
    GpuProfile g = probe_one(devices.front(), options, diagnostics);
    g.count = static_cast<std::int64_t>(devices.size());
    if (devices.size() > 1) probe_all_at_once(g, devices, options, diagnostics);
    result.gpus.push_back(std::move(g));
  }
  return result;
}

}  // namespace mlpo::profiles
