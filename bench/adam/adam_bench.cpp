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
//    Also the update pipeline's AdamW with CRC32C per chunk (`adamw-crc`: the call mlpo-profile
//    times as adam_checked_elements_per_s, `buffer`; and a mapped host tier's, `mapped`).
// 3. bf16 <-> fp32 conversion GB/s (6 B per element), which the profiler also reports.
// Every figure is the median of --reps timed repetitions after one untimed warm-up. The
// repetitions are interleaved (rep 1 of every kernel, then rep 2, ...) at each thread count, so a
// busy neighbour on a shared machine slows the roofs and the kernels alike and the ratios stay
// meaningful; the spread (min..max) is printed with each median.
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
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/page_array.hpp"
#include "core/thread_pool.hpp"
#include "core/units.hpp"
#include "kernels/cpu/adamw.hpp"
#include "kernels/cpu/convert.hpp"
#include "executor/offload/checked_adamw.hpp"
#include "core/usable_cores.hpp"

namespace mlpo {
namespace {

// The benchmark's arrays (core/page_array.hpp), its message when memory is short.
template <class T>
struct PageBuffer : PageArray<T> {
  PageBuffer(std::size_t n, ThreadPool& pool)
      : PageArray<T>(n, pool, "adam_bench", "; lower --elements or --memcpy-bytes") {}
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

// One timed kernel: what it is, the bytes and elements one run moves, and its timings.
struct Measurement {
  std::string kind;    // "memcpy", "nt-copy", "in-place", "adamw", "adamw-crc", "convert"
  std::string detail;  // e.g. "avx512 bf16", "avx2 fp32->bf16"
  double bytes = 0;    // bytes moved per run, by the conventions above
  double elements = 0;
  std::function<void()> run;
  std::vector<double> seconds;

  double time(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void sample() { seconds.push_back(time(run)); }
  double median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double fastest() const { return *std::min_element(seconds.begin(), seconds.end()); }
  double slowest() const { return *std::max_element(seconds.begin(), seconds.end()); }
  double gbps(double s) const { return bytes / s / GB; }
};

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
  const std::uint64_t copy_bytes = round_up(parse_bytes(opt.memcpy_bytes, "--memcpy-bytes"), 4096);
  std::vector<unsigned> threads = opt.threads;
  if (threads.empty())
    for (unsigned t = 1; t <= usable_cores(); ++t) threads.push_back(t);
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
    if (simd_isa_supported(i)) have += ", " + std::string(to_string(i));
  std::printf("cpu: %s (%u hardware threads; SIMD variants: scalar%s; best: %s)\n", cpu_model().c_str(),
              usable_cores(), have.c_str(), std::string(to_string(best_simd_isa())).c_str());
  const std::size_t n = opt.elements;
  std::printf(
      "memcpy/nt-copy/in-place over %s; AdamW over %zu elements (%s of p, m, v, plus gradients and "
      "p_bf16); %d interleaved repetitions\n",
      format_bytes(static_cast<double>(copy_bytes)).c_str(), n,
      format_bytes(12.0 * static_cast<double>(n)).c_str(), opt.reps);
  nlohmann::json out = {{"schema", "mlpo.bench.adam/1"},
                        {"cpu", cpu_model()},
                        {"elements", n},
                        {"memcpy_bytes", copy_bytes},
                        {"reps", opt.reps}};

  const unsigned max_threads = *std::max_element(threads.begin(), threads.end());
  ThreadPool alloc_pool(max_threads);
  PageBuffer<char> src(copy_bytes, alloc_pool), dst(copy_bytes, alloc_pool);
  std::memset(src.data(), 1, copy_bytes);
  PageBuffer<float> p(n, alloc_pool), m(n, alloc_pool), v(n, alloc_pool), g32(n, alloc_pool),
      wide(n, alloc_pool);
  PageBuffer<bf16> g16(n, alloc_pool), p_out(n, alloc_pool), narrow(n, alloc_pool);
  // adamw-crc's own state: the other AdamW rows change p, m, v between its verifies.
  PageBuffer<float> pc(n, alloc_pool), mc(n, alloc_pool), vc(n, alloc_pool);
  alloc_pool.parallel_for(n, 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const float x = static_cast<float>(static_cast<int>(i % 2001) - 1000) * 1e-3f;  // [-1, 1]
      p.data()[i] = x;
      pc.data()[i] = x;
      g32.data()[i] = 1e-2f * x + 1e-4f;
      g16.data()[i] = float_to_bf16(g32.data()[i]);
    }
  });

  struct Row {
    unsigned threads;
    Measurement m;
  };
  std::vector<Row> rows;
  for (unsigned t : threads) {
    ThreadPool pool(t);
    std::vector<Measurement> ms;
    const double copy = 2.0 * static_cast<double>(copy_bytes);
    ms.push_back({"memcpy", "glibc", copy, 0, [&] {
                    pool.parallel_for(copy_bytes, 4096, [&](std::size_t b, std::size_t e) {
                      std::memcpy(dst.data() + b, src.data() + b, e - b);
                    });
                  }});
    ms.push_back({"nt-copy", "sse2 streaming stores", copy, 0, [&] {
                    pool.parallel_for(copy_bytes, 4096, [&](std::size_t b, std::size_t e) {
                      copy_non_temporal(dst.data() + b, src.data() + b, e - b);
                    });
                  }});
    ms.push_back({"in-place", "x[i] += 1", copy, 0, [&] {
                    float* x = reinterpret_cast<float*>(dst.data());
                    pool.parallel_for(copy_bytes / sizeof(float), 1024,
                                      [&](std::size_t b, std::size_t e) { add_one_in_place(x + b, e - b); });
                  }});
    for (SimdIsa isa : isas)
      for (bool bf16_grad : {true, false}) {
        const auto step = std::make_shared<AdamWParams>();
        step->weight_decay = 0.01f;
        ms.push_back({"adamw", std::string(to_string(isa)) + (bf16_grad ? " bf16" : " fp32"),
                      static_cast<double>(adamw_bytes_per_element(bf16_grad, true) * n),
                      static_cast<double>(n), [&, isa, bf16_grad, step] {
                        if (bf16_grad)
                          adamw_update_bf16grad(pool, *step, p.data(), m.data(), v.data(), g16.data(),
                                                p_out.data(), n, isa);
                        else
                          adamw_update_fp32grad(pool, *step, p.data(), m.data(), v.data(), g32.data(),
                                                p_out.data(), n, isa);
                        ++step->step;
                      }});
      }
    // The update pipeline's AdamW with integrity on (offload::checked_adamw: per chunk verify,
    // update, record), the call mlpo-profile times as adam_checked_elements_per_s; the best SIMD
    // variant, bf16 gradients: a streamed subgroup's buffer (`buffer`) and a host tier's mapped
    // file (`mapped`: the new values staged until the chunk's check passed). Their first call
    // (the warm-up) records only. Both update pc, mc, vc: one set of records, one step count.
    const auto step = std::make_shared<AdamWParams>();
    step->weight_decay = 0.01f;
    const auto integrity = std::make_shared<offload::InPlaceIntegrity>();
    integrity->add_subgroup(0, static_cast<std::int64_t>(n));
    for (bool mapped : {false, true}) {
      ms.push_back({"adamw-crc", std::string(to_string(best_simd_isa())) + (mapped ? " mapped" : " buffer"),
                    static_cast<double>(adamw_bytes_per_element(true, true) * n), static_cast<double>(n),
                    [&, step, integrity, mapped] {
                      static const offload::WeightDecayMask every_element_decays;
                      offload::checked_adamw(pool, *integrity, 0, every_element_decays, 0, *step, pc.data(),
                                             mc.data(), vc.data(), nullptr, g16.data(), p_out.data(), n,
                                             mapped, "adam_bench");
                      ++step->step;
                    }});
    }
    for (SimdIsa isa : isas) {
      ms.push_back({"convert", std::string(to_string(isa)) + " bf16->fp32", 6.0 * static_cast<double>(n),
                    static_cast<double>(n),
                    [&, isa] { bf16_to_fp32(pool, g16.data(), wide.data(), n, isa); }});
      ms.push_back({"convert", std::string(to_string(isa)) + " fp32->bf16", 6.0 * static_cast<double>(n),
                    static_cast<double>(n),
                    [&, isa] { fp32_to_bf16(pool, g32.data(), narrow.data(), n, isa); }});
    }
    for (Measurement& x : ms) x.run();  // warm-up: faults in pages, spins up the workers
    for (int r = 0; r < opt.reps; ++r)
      for (Measurement& x : ms) x.sample();
    for (Measurement& x : ms) rows.push_back({t, std::move(x)});
  }

  // The bound: memcpy at its best thread count. Roofs for the per-thread-count ratios.
  double bound = 0.0;
  std::vector<double> memcpy_at(max_threads + 1, 0.0), inplace_at(max_threads + 1, 0.0);
  for (const Row& r : rows) {
    if (r.m.kind == "memcpy") {
      memcpy_at[r.threads] = r.m.gbps(r.m.median());
      bound = std::max(bound, memcpy_at[r.threads]);
    }
    if (r.m.kind == "in-place") inplace_at[r.threads] = r.m.gbps(r.m.median());
  }
  out["memcpy_bound_gbps"] = bound;

  std::printf(
      "\nGB/s = bytes moved / median seconds (copy, in-place: 2x buffer; AdamW: 28 B/element with\n"
      "bf16 gradients, 30 B with fp32; conversion: 6 B/element). /bound = over the memcpy bound\n"
      "(%.2f GB/s, memcpy at its best thread count); /memcpy_t and /inplace_t = over memcpy and the\n"
      "in-place stream at the same thread count. GB/s range = slowest..fastest repetition.\n\n",
      bound);
  std::printf("%-9s %-22s %3s %9s %9s %8s %15s %7s %9s %10s\n", "kernel", "variant", "thr", "median s",
              "Melem/s", "GB/s", "GB/s range", "/bound", "/memcpy_t", "/inplace_t");
  for (const Row& r : rows) {
    const Measurement& x = r.m;
    const double s = x.median(), gbs = x.gbps(s);
    char melem[32] = "-";
    if (x.elements > 0) std::snprintf(melem, sizeof melem, "%.1f", x.elements / s / 1e6);
    char range[32];
    std::snprintf(range, sizeof range, "%.1f..%.1f", x.gbps(x.slowest()), x.gbps(x.fastest()));
    std::printf("%-9s %-22s %3u %9.4f %9s %8.2f %15s %7.2f %9.2f %10.2f\n", x.kind.c_str(), x.detail.c_str(),
                r.threads, s, melem, gbs, range, gbs / bound, gbs / memcpy_at[r.threads],
                gbs / inplace_at[r.threads]);
    nlohmann::json j = {{"kernel", x.kind},
                        {"variant", x.detail},
                        {"threads", r.threads},
                        {"bytes", x.bytes},
                        {"median_s", s},
                        {"seconds", x.seconds},
                        {"gbps", gbs},
                        {"ratio_to_bound", gbs / bound},
                        {"ratio_to_memcpy_same_threads", gbs / memcpy_at[r.threads]},
                        {"ratio_to_in_place_same_threads", gbs / inplace_at[r.threads]}};
    if (x.elements > 0) j["elements_per_s"] = x.elements / s;
    out["results"].push_back(j);
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
  app.add_option("--threads", opt.threads, "thread counts to measure (default 1..hardware threads)")
      ->delimiter(',');
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
