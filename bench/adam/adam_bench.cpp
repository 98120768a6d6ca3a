// adam_bench: how close the fused CPU AdamW comes to the machine's memory bandwidth.
//
// 1. memcpy GB/s with 1..N threads over buffers far larger than the caches. Convention: a copy of
//    N bytes moves 2N bytes (N read + N written), and GB/s = 2N / seconds. memcpy is the bound the
//    project's target is stated against. Two more memory roofs are printed beside it, because
//    AdamW's traffic is not a copy: a copy with non-temporal stores (no read-for-ownership of the
//    destination) and an in-place read-modify-write stream (x[i] += 1 over N bytes: also 2N
//    bytes moved), which is what AdamW does to p, m and v.
// 2. AdamW elements/s for bf16 and fp32 gradients, per SIMD variant, at 1..N threads, and the
//    effective GB/s = elements/s * bytes the update must move per element (28 B with bf16
//    gradients: read p, m, v, g = 12 + 2, write p, m, v, p_bf16 = 12 + 2; 30 B with fp32).
// 3. bf16 <-> fp32 conversion GB/s (6 B per element), which the profiler also reports.
// Every figure is the median of --reps timed repetitions after one untimed warm-up.
//
//   adam_bench [--elements N] [--threads 1,2] [--isa best|scalar|avx2|avx512|all] [--reps 7]
//              [--memcpy-bytes 1GiB] [--json out.json]

#include <CLI/CLI.hpp>
#include <emmintrin.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "core/units.hpp"
#include "kernels/cpu/adamw.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo {
namespace {

// Page-aligned heap array, first touched by the pool that will use it (so pages land near the
// threads that stream them).
template <class T>
class PageBuffer {
 public:
  PageBuffer(std::size_t n, ThreadPool& pool) : n_(n) {
    const std::size_t bytes = round_up(std::max<std::size_t>(n, 1) * sizeof(T), 4096);
    ptr_.reset(static_cast<T*>(std::aligned_alloc(4096, bytes)));
    if (!ptr_) throw Error("adam_bench: cannot allocate " + format_bytes(static_cast<double>(bytes)) +
                           "; lower --elements or --memcpy-bytes");
    pool.parallel_for(bytes, 4096, [&](std::size_t b, std::size_t e) {
      std::memset(reinterpret_cast<char*>(ptr_.get()) + b, 0, e - b);
    });
  }
  T* data() { return ptr_.get(); }
  std::size_t size() const { return n_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> ptr_;
  std::size_t n_;
};

// Copy with SSE2 non-temporal stores (baseline x86-64, no -m flags). dst and src 16-byte aligned,
// bytes a multiple of 64.
void copy_non_temporal(char* dst, const char* src, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 64)
    for (std::size_t j = 0; j < 64; j += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + j),
                       _mm_load_si128(reinterpret_cast<const __m128i*>(src + i + j)));
  _mm_sfence();
}

void add_one_in_place(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += 1.0f;
}

double median_seconds(int reps, const std::function<void()>& body) {
  body();  // warm-up: faults in pages, spins up the workers
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

struct Options {
  std::size_t elements = std::size_t{1} << 26;
  std::string memcpy_bytes = "1GiB";
  std::vector<unsigned> threads;
  std::string isa = "all";
  int reps = 7;
  std::string json_path;
};

int run(const Options& opt) {
  const std::uint64_t copy_bytes = parse_bytes(opt.memcpy_bytes, "--memcpy-bytes");
  std::vector<unsigned> threads = opt.threads;
  if (threads.empty())
    for (unsigned t = 1; t <= std::max(1u, std::thread::hardware_concurrency()); ++t) threads.push_back(t);
  std::vector<SimdIsa> isas;
  if (opt.isa == "all") {
    for (SimdIsa i : {SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512})
      if (simd_isa_supported(i)) isas.push_back(i);
  } else {
    isas.push_back(resolve_simd_isa(parse_simd_isa(opt.isa)));
  }
  if (opt.reps < 5) throw Error("--reps is " + std::to_string(opt.reps) + "; medians need at least 5");

  std::string have;
  for (SimdIsa i : {SimdIsa::avx2, SimdIsa::avx512})
    if (simd_isa_supported(i)) have += std::string(have.empty() ? "" : ", ") + std::string(to_string(i));
  std::printf("cpu: %s (%u hardware threads; SIMD variants: scalar%s%s; best: %s)\n", cpu_model().c_str(),
              std::thread::hardware_concurrency(), have.empty() ? "" : ", ", have.c_str(),
              std::string(to_string(best_simd_isa())).c_str());
  nlohmann::json out = {{"schema", "mlpo.bench.adam/1"},
                        {"cpu", cpu_model()},
                        {"elements", opt.elements},
                        {"memcpy_bytes", copy_bytes},
                        {"reps", opt.reps}};

  const unsigned max_threads = *std::max_element(threads.begin(), threads.end());
  ThreadPool alloc_pool(max_threads);

  // 1. Memory roofs: memcpy (the bound), non-temporal copy, in-place stream.
  std::vector<double> memcpy_gbs(max_threads + 1, 0.0), inplace_gbs(max_threads + 1, 0.0);
  double best_memcpy = 0.0;
  {
    PageBuffer<char> src(copy_bytes, alloc_pool), dst(copy_bytes, alloc_pool);
    std::memset(src.data(), 1, copy_bytes);
    std::printf("\nmemory roofs over %s buffers (GB/s counts read + write: 2x the bytes copied or updated)\n",
                format_bytes(static_cast<double>(copy_bytes)).c_str());
    std::printf("%8s %14s %14s %14s\n", "threads", "memcpy GB/s", "nt-copy GB/s", "in-place GB/s");
    for (unsigned t : threads) {
      ThreadPool pool(t);
      const auto gbs = [&](double s) { return 2.0 * static_cast<double>(copy_bytes) / s / GB; };
      const double s_memcpy = median_seconds(opt.reps, [&] {
        pool.parallel_for(copy_bytes, 4096, [&](std::size_t b, std::size_t e) {
          std::memcpy(dst.data() + b, src.data() + b, e - b);
        });
      });
      const double s_nt = median_seconds(opt.reps, [&] {
        pool.parallel_for(copy_bytes, 4096, [&](std::size_t b, std::size_t e) {
          copy_non_temporal(dst.data() + b, src.data() + b, e - b);
        });
      });
      float* x = reinterpret_cast<float*>(dst.data());
      const double s_inplace = median_seconds(opt.reps, [&] {
        pool.parallel_for(copy_bytes / sizeof(float), 1024,
                          [&](std::size_t b, std::size_t e) { add_one_in_place(x + b, e - b); });
      });
      memcpy_gbs[t] = gbs(s_memcpy);
      inplace_gbs[t] = gbs(s_inplace);
      best_memcpy = std::max(best_memcpy, memcpy_gbs[t]);
      std::printf("%8u %14.2f %14.2f %14.2f\n", t, memcpy_gbs[t], gbs(s_nt), inplace_gbs[t]);
      out["memory"].push_back({{"threads", t},
                               {"memcpy_gbps", memcpy_gbs[t]},
                               {"memcpy_median_s", s_memcpy},
                               {"nt_copy_gbps", gbs(s_nt)},
                               {"in_place_gbps", inplace_gbs[t]}});
    }
    std::printf("memcpy bound (best over thread counts): %.2f GB/s\n", best_memcpy);
    out["memcpy_bound_gbps"] = best_memcpy;
  }

  // 2. AdamW.
  const std::size_t n = opt.elements;
  PageBuffer<float> p(n, alloc_pool), m(n, alloc_pool), v(n, alloc_pool), g32(n, alloc_pool);
  PageBuffer<bf16> g16(n, alloc_pool), p_out(n, alloc_pool);
  alloc_pool.parallel_for(n, 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const float x = static_cast<float>(static_cast<int>(i % 2001) - 1000) * 1e-3f;  // [-1, 1]
      p.data()[i] = x;
      g32.data()[i] = 1e-2f * x + 1e-4f;
      g16.data()[i] = float_to_bf16(g32.data()[i]);
    }
  });
  std::printf("\nAdamW, %zu elements (%s of p, m, v), p_bf16 written\n", n,
              format_bytes(12.0 * static_cast<double>(n)).c_str());
  std::printf("ratios: /memcpy = GB/s over the memcpy bound (the target, >= 0.8); /memcpy_t = over memcpy at\n"
              "the same thread count; /inplace_t = over the in-place stream at the same thread count\n");
  std::printf("%-7s %-5s %7s %10s %10s %8s %10s %10s %10s\n", "isa", "grad", "threads", "median s", "Melem/s",
              "GB/s", "/memcpy", "/memcpy_t", "/inplace_t");
  for (SimdIsa isa : isas)
    for (bool bf16_grad : {true, false})
      for (unsigned t : threads) {
        ThreadPool pool(t);
        AdamWParams a;
        a.weight_decay = 0.01f;
        const double s = median_seconds(opt.reps, [&] {
          if (bf16_grad)
            adamw_update_bf16grad(pool, a, p.data(), m.data(), v.data(), g16.data(), p_out.data(), n, isa);
          else
            adamw_update_fp32grad(pool, a, p.data(), m.data(), v.data(), g32.data(), p_out.data(), n, isa);
          ++a.step;
        });
        const double eps = static_cast<double>(n) / s;
        const double gbs = eps * static_cast<double>(adamw_bytes_per_element(bf16_grad, true)) / GB;
        std::printf("%-7s %-5s %7u %10.4f %10.1f %8.2f %10.2f %10.2f %10.2f\n",
                    std::string(to_string(isa)).c_str(), bf16_grad ? "bf16" : "fp32", t, s, eps / 1e6, gbs,
                    gbs / best_memcpy, gbs / memcpy_gbs[t], gbs / inplace_gbs[t]);
        out["adamw"].push_back({{"isa", to_string(isa)},
                                {"grad", bf16_grad ? "bf16" : "fp32"},
                                {"threads", t},
                                {"bytes_per_element", adamw_bytes_per_element(bf16_grad, true)},
                                {"median_s", s},
                                {"elements_per_s", eps},
                                {"gbps", gbs},
                                {"ratio_to_memcpy_same_threads", gbs / memcpy_gbs[t]},
                                {"ratio_to_memcpy_bound", gbs / best_memcpy},
                                {"ratio_to_in_place_same_threads", gbs / inplace_gbs[t]}});
      }

  // 3. Conversion (reuses the AdamW arrays: g16 <-> g32).
  std::printf("\nbf16 <-> fp32 conversion, %zu elements (GB/s counts 6 B per element)\n", n);
  std::printf("%-7s %-13s %7s %10s %8s %10s\n", "isa", "direction", "threads", "median s", "GB/s", "/memcpy");
  for (SimdIsa isa : isas)
    for (bool widen : {true, false})
      for (unsigned t : threads) {
        ThreadPool pool(t);
        const double s = median_seconds(opt.reps, [&] {
          if (widen)
            bf16_to_fp32(pool, g16.data(), g32.data(), n, isa);
          else
            fp32_to_bf16(pool, g32.data(), g16.data(), n, isa);
        });
        const double gbs = 6.0 * static_cast<double>(n) / s / GB;
        const char* dir = widen ? "bf16->fp32" : "fp32->bf16";
        std::printf("%-7s %-13s %7u %10.4f %8.2f %10.2f\n", std::string(to_string(isa)).c_str(), dir, t, s, gbs,
                    gbs / best_memcpy);
        out["convert"].push_back(
            {{"isa", to_string(isa)}, {"direction", dir}, {"threads", t}, {"median_s", s}, {"gbps", gbs}});
      }

  if (!opt.json_path.empty()) {
    std::ofstream f(opt.json_path);
    if (!f) throw Error("cannot write --json file '" + opt.json_path + "'");
    f << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace mlpo

int main(int argc, char** argv) {
  mlpo::Options opt;
  CLI::App app{"Fused CPU AdamW and bf16<->fp32 conversion against the memcpy bandwidth bound"};
  app.add_option("--elements", opt.elements, "elements per AdamW update (default 2^26: 768 MiB of p, m, v)");
  app.add_option("--memcpy-bytes", opt.memcpy_bytes, "bytes copied per memcpy repetition, e.g. 1GiB");
  app.add_option("--threads", opt.threads, "thread counts to measure (default 1..hardware threads)")->delimiter(',');
  app.add_option("--isa", opt.isa, "SIMD variant: all (every one the CPU has), best, scalar, avx2, avx512");
  app.add_option("--reps", opt.reps, "timed repetitions per figure; the median is reported (>= 5)");
  app.add_option("--json", opt.json_path, "also write the results as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return mlpo::run(opt);
  } catch (const mlpo::Error& e) {
    std::fprintf(stderr, "adam_bench: %s\n", e.what());
    return 2;
  }
}
