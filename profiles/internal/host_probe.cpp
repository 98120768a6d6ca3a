#include "profiles/internal/host_probe.hpp"

#include <span>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/page_array.hpp"
#include "core/host_memory.hpp"
#include "core/thread_pool.hpp"
#include "core/units.hpp"
#include "kernels/cpu/adamw.hpp"
#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/offload/checked_adamw.hpp"
#include "executor/offload/gradient_norm.hpp"
#include "executor/compute/compute_backend.hpp"
#include "profiles/internal/compute_probe.hpp"
#include "profiles/gemm_shapes.hpp"
#include "core/interrupt.hpp"
#include "profiles/internal/sample_stats.hpp"
#include "core/usable_cores.hpp"

namespace mlpo::profiles {

namespace {

using Clock = std::chrono::steady_clock;

// The probe's arrays (core/page_array.hpp), its message when memory is short.
template <class T>
struct HostArray : PageArray<T> {
  HostArray(std::size_t count, ThreadPool& pool)
      : PageArray<T>(count, pool, "host probe", " of memory; use --quick or free memory") {}
};

double seconds_of(const std::function<void()>& run) {
  const auto t0 = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One warm-up, then `reps` timed runs; each sample is work / seconds (GB/s, elements/s...).
Measurement time_rate(int reps, double work_per_run, double unit, std::int64_t size_bytes,
                      const std::function<void()>& run) {
  throw_if_interrupted();
  run();
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    throw_if_interrupted();
    rates.push_back(work_per_run / seconds_of(run) / unit);
  }
  return summarize(std::move(rates), size_bytes);
}

// `calls` calls of `call` per repetition (after one warm-up): seconds per call.
Measurement seconds_per_call(int reps, int calls, const std::function<void()>& call) {
  const Measurement rate = time_rate(reps, calls, 1.0, 0, [&] {
    for (int i = 0; i < calls; ++i) call();
  });
  return Measurement{1.0 / rate.median, 1.0 / rate.max, 1.0 / rate.min, rate.repetitions, 0};
}

std::int64_t numa_nodes() {
  std::int64_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      ++n;
  }
  return std::max<std::int64_t>(n, 1);
}

Measurement probe_memcpy(ThreadPool& pool, std::uint64_t bytes, int reps) {
  HostArray<char> src(bytes, pool), dst(bytes, pool);
  std::memset(src.data(), 0x5a, bytes);
  return time_rate(reps, static_cast<double>(bytes), GB, static_cast<std::int64_t>(bytes), [&] {
    pool.parallel_for(bytes, 1 << 20, [&](std::size_t b, std::size_t e) {
      std::memcpy(dst.data() + b, src.data() + b, e - b);
    });
  });
}

Measurement probe_cpu_gemm(const HostProbeOptions& options, ThreadPool& pool) {
  CpuBackend backend(pool);
  const std::vector<GemmShape> shapes = transformer_gemm_shapes(options.gemm_model, options.gemm_tokens);
  struct Operands {
    DeviceBuffer x, w, out;
    Tensor tx, tw, tout;
  };
  std::vector<Operands> ops;
  double flops = 0;
  std::int64_t bytes = 0;
  for (const GemmShape& s : shapes) {
    Operands o;
    o.x = backend.allocate(DType::bf16, s.m * s.k);
    o.w = backend.allocate(DType::bf16, s.n * s.k);
    o.out = backend.allocate(DType::bf16, s.m * s.n);
    o.tx = Tensor(o.x.data(), DType::bf16, {s.m, s.k});
    o.tw = Tensor(o.w.data(), DType::bf16, {s.n, s.k});
    o.tout = Tensor(o.out.data(), DType::bf16, {s.m, s.n});
    backend.fill(o.tx, 0.01);
    backend.fill(o.tw, 0.02);
    flops += s.flops() * s.per_layer;
    bytes += 2 * (s.m * s.k + s.n * s.k + s.m * s.n);
    ops.push_back(std::move(o));
  }
  return time_rate(options.repetitions, flops, 1e9, bytes, [&] {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      for (int rep = 0; rep < shapes[i].per_layer; ++rep)
        backend.linear_forward(ops[i].tout, ops[i].tx, ops[i].tw);
  });
}

// The executor's forward and backward on the CPU backend as mlpo-run opens it (open_backend, its
// default --blas-threads: one column block per pool thread): each repetition's GFLOP/s per part.
profiles::ComputeProbeSamples run_cpu_model_probe(const HostProbeOptions& options, ThreadPool& pool,
                                                  const Diagnostics& diagnostics) {
  const compute::ComputeBackend device =
      compute::open_backend(compute::parse_backend("cpu", "--backend"), pool, pool.size(), 0);
  profiles::ComputeProbeOptions probe{options.gemm_model, options.model_micro_batch, options.model_seq_len,
                                      options.model_repetitions};
  return profiles::probe_model_compute(*device.backend, probe,
                                       [&](const std::string& line) { diagnostics.progress("host", line); });
}

ModelComputeFigures cpu_model_figures(const HostProbeOptions& options, std::int64_t threads,
                                      const profiles::ComputeProbeSamples& s) {
  ModelComputeFigures f;
  f.model = options.gemm_model.name;
  f.micro_batch = options.model_micro_batch;
  f.seq_len = options.model_seq_len;
  f.threads = threads;
  f.layer_forward_gflops = summarize(s.layer_forward_gflops, 0);
  f.layer_backward_gflops = summarize(s.layer_backward_gflops, 0);
  f.head_forward_gflops = summarize(s.head_forward_gflops, 0);
  f.head_backward_gflops = summarize(s.head_backward_gflops, 0);
  return f;
}

ModelComputeFigures probe_cpu_model(const HostProbeOptions& options, ThreadPool& pool,
                                    const Diagnostics& diagnostics) {
  return cpu_model_figures(options, static_cast<std::int64_t>(pool.size()),
                           run_cpu_model_probe(options, pool, diagnostics));
}

// One rank of several per node: the probe on one thread, one copy per core running at once,
// as `cores` one-thread ranks run (they share the caches, the memory bandwidth and the
// turbo budget, which one thread alone on an idle machine does not). Every copy's samples
// make the figures; copy 0 reports progress.
ModelComputeFigures probe_cpu_model_one_thread_per_core(const HostProbeOptions& options, unsigned cores,
                                                        const Diagnostics& diagnostics) {
  std::vector<profiles::ComputeProbeSamples> samples(cores);
  std::vector<std::exception_ptr> errors(cores);
  {
    std::vector<std::jthread> copies;
    for (unsigned c = 0; c < cores; ++c)
      copies.emplace_back([&, c] {
        try {
          ThreadPool one(1);
          samples[c] = run_cpu_model_probe(options, one, c == 0 ? diagnostics : Diagnostics{});
        } catch (...) {
          errors[c] = std::current_exception();
        }
      });
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  profiles::ComputeProbeSamples all;
  auto add = [](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  for (const profiles::ComputeProbeSamples& s : samples) {
    add(all.layer_forward_gflops, s.layer_forward_gflops);
    add(all.layer_backward_gflops, s.layer_backward_gflops);
    add(all.head_forward_gflops, s.head_forward_gflops);
    add(all.head_backward_gflops, s.head_backward_gflops);
  }
  return cpu_model_figures(options, 1, all);
}

// memcpy bandwidth, on one thread and on all of them.
void probe_memcpy_rates(HostProfile& h, const HostProbeOptions& options, ThreadPool& all,
                        const Diagnostics& diagnostics) {
  const unsigned cores = static_cast<unsigned>(h.cores);
  diagnostics.progress("host",
                       "host: memcpy, 1 thread, " + format_bytes(static_cast<double>(options.memcpy_bytes)));
  ThreadPool one(1);
  h.memcpy_gbps_single = probe_memcpy(one, options.memcpy_bytes, options.repetitions);
  diagnostics.progress("host", "host: memcpy, " + std::to_string(cores) + " threads");
  h.memcpy_gbps = probe_memcpy(all, options.memcpy_bytes, options.repetitions);
}

// The optimizer state and gradients the update probes run over: n elements of p, m, v (fp32)
// and of the bf16 gradient and weights.
struct UpdateArrays {
  UpdateArrays(std::size_t n, ThreadPool& all)
      : n(n), p(n, all), m(n, all), v(n, all), grad(n, all), p_out(n, all) {
    all.parallel_for(n, adamw_grain, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        p.data()[i] = 0.01f * static_cast<float>(i % 97);
        grad.data()[i] = float_to_bf16(1e-3f * static_cast<float>(static_cast<int>(i % 13) - 6));
      }
    });
  }
  std::int64_t state_bytes() const { return static_cast<std::int64_t>(12 * n); }

  std::size_t n;
  HostArray<float> p, m, v;
  HostArray<bf16> grad, p_out;
};

// AdamW's rate per thread count: the plain update, then the same update as the pipeline runs
// it with integrity on (the very function, per 16 Ki-element chunk verify, AdamW, record; its
// first call records only).
void probe_adamw_rates(HostProfile& h, const std::vector<unsigned>& threads, const UpdateArrays& a, int reps,
                       const Diagnostics& diagnostics) {
  const std::size_t n = a.n;
  AdamWParams params;
  params.weight_decay = 0.01f;
  for (unsigned t : threads) {
    diagnostics.progress("host", "host: AdamW (bf16 gradients), " + std::to_string(t) + " thread(s), " +
                                     format_bytes(static_cast<double>(a.state_bytes())) + " of state");
    ThreadPool pool(t);
    h.adam_elements_per_s.push_back(
        {static_cast<std::int64_t>(t), time_rate(reps, static_cast<double>(n), 1.0, a.state_bytes(), [&] {
           adamw_update_bf16grad(pool, params, a.p.data(), a.m.data(), a.v.data(), a.grad.data(),
                                 a.p_out.data(), n);
           ++params.step;
         })});
  }
  h.adam_estimated = false;

  for (unsigned t : threads) {
    diagnostics.progress("host", "host: AdamW with CRC32C per 16 Ki-element chunk (the update pipeline's), " +
                                     std::to_string(t) + " thread(s)");
    ThreadPool pool(t);
    offload::InPlaceIntegrity integrity;
    integrity.add_subgroup(0, static_cast<std::int64_t>(n));
    const offload::WeightDecayMask every_element_decays;
    h.adam_checked_elements_per_s.push_back(
        {static_cast<std::int64_t>(t), time_rate(reps, static_cast<double>(n), 1.0, a.state_bytes(), [&] {
           offload::checked_adamw(pool, integrity, 0, every_element_decays, 0, params, a.p.data(), a.m.data(),
                                  a.v.data(), nullptr, a.grad.data(), a.p_out.data(), n, /*mapped=*/false,
                                  "host probe");
           ++params.step;
         })});
  }
}

// The passes around the update: bf16 <-> fp32 conversion, the integrity check's CRC32C and the
// gradient norm.
void probe_update_passes(HostProfile& h, const UpdateArrays& a, ThreadPool& all, int reps,
                         const Diagnostics& diagnostics) {
  const std::size_t n = a.n;
  const unsigned cores = static_cast<unsigned>(h.cores);
  diagnostics.progress("host", "host: bf16 <-> fp32 conversion, " + std::to_string(cores) + " threads");
  const double fp32_bytes = 4.0 * static_cast<double>(n);
  h.bf16_convert_gbps = time_rate(reps, fp32_bytes, GB, static_cast<std::int64_t>(fp32_bytes),
                                  [&] { fp32_to_bf16(all, a.p.data(), a.p_out.data(), n); });
  h.bf16_to_fp32_gbps = time_rate(reps, fp32_bytes, GB, static_cast<std::int64_t>(fp32_bytes),
                                  [&] { bf16_to_fp32(all, a.grad.data(), a.m.data(), n); });

  // The integrity check runs per 16 Ki-element chunk inside AdamW's pass, on data in cache:
  // crc32c_three over the chunk's p, m and v (256 KiB each), the pipeline's own call.
  diagnostics.progress("host", "host: CRC32C (" + std::string(io::crc32c_path_name(io::crc32c_path())) +
                                   "), 1 thread, a chunk's p, m, v (3 x 256 KiB) in cache");
  const std::size_t kChunk = std::min<std::size_t>(256 * 1024, static_cast<std::size_t>(fp32_bytes));
  const std::size_t passes = std::max<std::size_t>(1, static_cast<std::size_t>(fp32_bytes) / kChunk);
  volatile std::uint32_t sink = 0;  // read back each pass: the loop cannot be dropped
  h.crc32c_gbps = time_rate(reps, static_cast<double>(3 * passes * kChunk), GB,
                            static_cast<std::int64_t>(3 * kChunk), [&] {
                              for (std::size_t i = 0; i < passes; ++i)
                                sink = sink + io::crc32c_three(a.p.data(), a.m.data(), a.v.data(), kChunk)[0];
                            });

  // The gradient norm's pass after backward: the executor's own function over a bf16 shard.
  diagnostics.progress("host",
                       "host: gradient norm (bf16 sums of squares), " + std::to_string(cores) + " threads");
  volatile double norm_sink = 0;
  h.grad_norm_elements_per_s =
      time_rate(reps, static_cast<double>(n), 1.0, static_cast<std::int64_t>(2 * n), [&] {
        const std::vector<double> sums =
            offload::chunk_square_sums(std::span<const bf16>(a.grad.data(), n), all);
        norm_sink = norm_sink + offload::global_norm(sums);
      });
}

// The update's CPU figures over a state of options.adam_state_bytes.
void probe_update_rates(HostProfile& h, const HostProbeOptions& options, ThreadPool& all,
                        const Diagnostics& diagnostics) {
  const unsigned cores = static_cast<unsigned>(h.cores);
  const UpdateArrays arrays(round_up(options.adam_state_bytes / 12, adamw_grain), all);
  std::vector<unsigned> threads = options.adam_threads;
  if (threads.empty())
    for (unsigned t = 1; t <= cores; ++t) threads.push_back(t);
  probe_adamw_rates(h, threads, arrays, options.repetitions, diagnostics);
  probe_update_passes(h, arrays, all, options.repetitions, diagnostics);
}

// Fixed costs per call that small work does not hide.
void probe_thread_costs(HostProfile& h, ThreadPool& all, int reps, const Diagnostics& diagnostics) {
  const unsigned cores = static_cast<unsigned>(h.cores);
  // The pool's fixed cost per call: every subgroup's AdamW wakes the rank's workers and waits
  // for them (ThreadPool::parallel_for), microseconds that a small subgroup's work does not hide.
  if (cores > 1) {
    diagnostics.progress("host", "host: thread pool wake-up and join, " + std::to_string(cores) + " threads");
    std::atomic<std::int64_t> ranges{0};
    h.pool_dispatch_s = seconds_per_call(reps, 2000, [&] {
      all.parallel_for(cores, 1,
                       [&](std::size_t, std::size_t) { ranges.fetch_add(1, std::memory_order_relaxed); });
    });
  }

  // The update pipeline's fixed cost per update: it starts a reader and a writer thread per
  // tier it moves bytes on and joins them at the end (a tiny model's update is a millisecond).
  diagnostics.progress("host", "host: thread start and join");
  std::atomic<std::int64_t> ran{0};
  h.thread_start_s = seconds_per_call(
      reps, 200, [&] { std::thread([&] { ran.fetch_add(1, std::memory_order_relaxed); }).join(); });
}

// The CPU backend's GEMMs and forward/backward, when asked for.
void probe_cpu_compute(HostProfile& h, const HostProbeOptions& options, ThreadPool& all,
                       const Diagnostics& diagnostics) {
  const unsigned cores = static_cast<unsigned>(h.cores);
  if (options.cpu_gemm) {
    diagnostics.progress("host", "host: CPU backend GEMM (" + options.gemm_model.name + " layer shapes, " +
                                     std::to_string(options.gemm_tokens) + " tokens)");
    h.cpu_gemm_gflops = probe_cpu_gemm(options, all);
  }
  if (options.cpu_model) {
    diagnostics.progress("host", "host: CPU backend forward/backward (" + options.gemm_model.name +
                                     " widths, 3 layers, micro-batch " +
                                     std::to_string(options.model_micro_batch) + " x seq " +
                                     std::to_string(options.model_seq_len) + ")");
    h.cpu_model = probe_cpu_model(options, all, diagnostics);
    if (cores > 1) {
      diagnostics.progress("host", "host: CPU backend forward/backward on 1 thread, " +
                                       std::to_string(cores) +
                                       " copies at once (one rank of several per node)");
      h.cpu_model_one_thread = probe_cpu_model_one_thread_per_core(options, cores, diagnostics);
    }
  }
}

}  // namespace

HostProfile read_host_facts() {
  HostProfile h;
  h.cores = usable_cores();  // the CPUs this process may use (a cpuset or taskset)
  h.memory_bytes = meminfo_bytes("MemTotal").value_or(0);
  h.available_bytes = std::min(host_memory_available().value_or(0), h.memory_bytes);
  h.numa_nodes = numa_nodes();
  return h;
}

HostProfile probe_host(const HostProbeOptions& options, const Diagnostics& diagnostics) {
  HostProfile h = read_host_facts();
  ThreadPool all(static_cast<unsigned>(h.cores));
  probe_memcpy_rates(h, options, all, diagnostics);
  probe_update_rates(h, options, all, diagnostics);
  probe_thread_costs(h, all, options.repetitions, diagnostics);
  probe_cpu_compute(h, options, all, diagnostics);
  return h;
}

}  // namespace mlpo::profiles
