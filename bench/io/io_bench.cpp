// io_bench: how fast the tier I/O engine streams, against fio on the same directories.
//
//   io_bench --tier disk=/var/tmp/mlpo-bench --tier shm=/dev/shm/mlpo-bench
//            --size 2GiB --bs 1MiB --qd 8 --streams 1 --direct on --reps 3 --vs-fio --together
//   io_bench --tier disk=/var/tmp/mlpo-bench --request 1MiB --buffer-span 8MiB   (fio's footprint)
//
// Per tier and repetition: a sequential write of `streams` fresh files of `size` bytes each
// (preallocated, like fio's fallocate=native), then a sequential read of them. The engine gets
// queue_depth = qd x streams on the tier, which is what fio's `numjobs` jobs of `iodepth`
// each put in flight. With --vs-fio, fio runs the same job (ioengine=io_uring, same bs,
// iodepth, size, numjobs, direct) in the same directory, alternating which goes first.
// With --together, all tiers are also driven at once, each given a share of the bytes in
// proportion to its measured alone throughput (as the placement policy does), and the
// aggregate is compared with the sum of the tiers alone; with --vs-fio too, fio drives all
// tiers at once as well (one job per tier), the machine's own figure for the same question.
// Medians, min and max of --reps.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/block_device_stats.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/io/tier_file.hpp"
#include "executor/io/tier_layout.hpp"
#include "executor/io/tier_set.hpp"

namespace mlpo::io {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> tier_specs;
  std::uint64_t size = 2 * GiB;
  std::uint64_t bs = 1 * MiB;
  unsigned qd = 8;
  unsigned streams = 1;
  bool direct = true;
  unsigned reps = 3;
  bool vs_fio = false;
  bool together = false;
  bool crc = false;
  bool drop_caches = false;
  bool small_pages = false;
  std::string fio_iomem;
  std::uint64_t request = 64 * MiB;
  std::uint64_t buffer_span = 0;  // bytes of buffers a stream cycles through (0: just enough)
  bool one_at_a_time = false;  // wait for each request before the next, as an update pipeline's reader does
};

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  return s;
}

std::string fmt(const Stats& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%6.3f [%.3f..%.3f]", s.median, s.min, s.max);
  return buf;
}

const char* op_name(IoOp op) { return op == IoOp::read ? "read" : "write"; }

std::filesystem::path bench_dir(const Tier& t) { return run_directory(t.path, "bench"); }

void drop_page_cache() {
  ::sync();
  if (std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w")) {
    std::fputs("3\n", f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "io_bench: warning: cannot drop the page cache (needs root); reads may hit it\n");
  }
}

// Buffers (requests outstanding) per stream: enough to keep qd x bs in flight plus two, or
// more when --buffer-span asks the stream to cycle through that many bytes of buffers. The
// ring still keeps at most qd operations in the kernel; extra requests wait in the engine.
unsigned buffers_per_stream(const Options& opt) {
  const std::uint64_t keep = 2 + (opt.bs * opt.qd + opt.request - 1) / opt.request;
  const std::uint64_t span = (opt.buffer_span + opt.request - 1) / opt.request;
  return static_cast<unsigned>(std::max(keep, span));
}

// Average size of the requests the block device saw during a pass (0 when the tier is not
// on a block device, e.g. tmpfs): shows whether transfers were split or merged below us.
class DeviceRequests {
 public:
  DeviceRequests(const std::filesystem::path& dir, IoOp op) : op_(op), device_(BlockDeviceStats::of(dir)) {
    if (device_) before_ = device_->snapshot();
  }
  double average_kib() const {
    const auto after = device_ ? device_->snapshot() : std::nullopt;
    if (!after || !before_) return 0.0;
    const BlockDeviceSnapshot d = *after - *before_;
    const auto ios = static_cast<double>(op_ == IoOp::read ? d.read_requests : d.write_requests);
    const auto bytes = static_cast<double>(op_ == IoOp::read ? d.read_bytes : d.write_bytes);
    return ios > 0 ? bytes / ios / 1024.0 : 0.0;
  }

 private:
  IoOp op_;
  std::optional<BlockDeviceStats> device_;
  std::optional<BlockDeviceSnapshot> before_;
};

// ---- the engine ----

// Drives `bytes[i]` bytes per stream through tier i of `tiers` (0 = tier not used), all
// tiers at once, and returns each tier's GB/s and the aggregate (total bytes / makespan).
struct EngineRun {
  std::vector<double> tier_gbps;
  double aggregate_gbps = 0;
};

EngineRun run_engine(TierSet& tiers, PinnedBufferPool& pool, const Options& opt, IoOp op,
                     const std::vector<std::uint64_t>& bytes_per_stream) {
  const std::size_t n = tiers.size();
  struct Stream {
    std::size_t tier;
    unsigned index;
    TierFile* file = nullptr;
    std::vector<PinnedBuffer> buffers;
    Clock::time_point end;
  };
  std::vector<Stream> streams;
  const unsigned outstanding = buffers_per_stream(opt);
  for (std::size_t t = 0; t < n; ++t) {
    if (bytes_per_stream[t] == 0) continue;
    for (unsigned s = 0; s < opt.streams; ++s) {
      Stream st{t, s};
      const std::filesystem::path rel = run_file_name("bench", "stream-" + std::to_string(s) + ".bin");
      if (op == IoOp::write) std::filesystem::remove(tiers[t].tier().path / rel);
      st.file = &tiers[t].open_file(rel, op == IoOp::write ? bytes_per_stream[t] : 0);
      if (op == IoOp::read && st.file->size() < bytes_per_stream[t]) {
        throw Error("io_bench: " + st.file->path().string() + " is shorter than the read; write first");
      }
      for (unsigned b = 0; b < outstanding; ++b) {
        st.buffers.push_back(pool.acquire(opt.request));
        if (op == IoOp::write) {
          std::mt19937_64 rng(1000 * t + 10 * s + b);
          auto* words = reinterpret_cast<std::uint64_t*>(st.buffers.back().data());
          for (std::size_t w = 0; w < st.buffers.back().size() / 8; ++w) words[w] = rng();
        }
      }
      streams.push_back(std::move(st));
    }
  }
  if (op == IoOp::read && opt.drop_caches) drop_page_cache();

  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (Stream& st : streams) {
    threads.emplace_back([&, total = bytes_per_stream[st.tier]] {
      TierIo& tio = tiers[st.tier];
      std::vector<IoRequest> in_flight(st.buffers.size());
      std::uint64_t offset = 0;
      for (std::size_t k = 0; offset < total; ++k) {
        const std::size_t slot = k % st.buffers.size();
        in_flight[slot].wait();  // the buffer is free again
        const std::uint64_t len = std::min(opt.request, total - offset);
        std::byte* buf = st.buffers[slot].data();
        in_flight[slot] =
            op == IoOp::write ? tio.write(*st.file, offset, len, buf) : tio.read(*st.file, offset, len, buf);
        if (opt.one_at_a_time) in_flight[slot].wait();
        offset += len;
      }
      for (IoRequest& r : in_flight) r.wait();
      st.end = Clock::now();
    });
  }
  for (auto& th : threads) th.join();

  EngineRun run;
  run.tier_gbps.assign(n, 0.0);
  Clock::time_point last = start;
  std::uint64_t total_bytes = 0;
  for (std::size_t t = 0; t < n; ++t) {
    Clock::time_point end = start;
    for (const Stream& st : streams) {
      if (st.tier == t) end = std::max(end, st.end);
    }
    const std::uint64_t bytes = bytes_per_stream[t] * opt.streams;
    total_bytes += bytes;
    last = std::max(last, end);
    if (bytes > 0)
      run.tier_gbps[t] = static_cast<double>(bytes) / std::chrono::duration<double>(end - start).count() / GB;
  }
  run.aggregate_gbps =
      static_cast<double>(total_bytes) / std::chrono::duration<double>(last - start).count() / GB;
  for (Stream& st : streams) {
    st.buffers.clear();
    tiers[st.tier].close_file(*st.file);
  }
  return run;
}

// ---- fio ----

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs one fio command line (JSON output) and returns its parsed report.
nlohmann::json run_fio_command(const std::string& args) {
  const std::string cmd = "fio " + args + " --output-format=json 2>/dev/null";
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw Error("io_bench: cannot run fio: " + errno_text(errno));
  std::string out;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, got);
  const int status = ::pclose(pipe);
  const std::size_t brace = out.find('{');
  if (status != 0 || brace == std::string::npos) {
    throw Error("io_bench: fio failed (exit status " + std::to_string(status) +
                "); is fio installed? command: " + cmd);
  }
  nlohmann::json j = nlohmann::json::parse(out.substr(brace));
  for (const auto& job : j.at("jobs")) {
    if (job.value("error", 0) != 0)
      throw Error("io_bench: fio reported error " + std::to_string(job.value("error", 0)));
  }
  return j;
}

std::string fio_common(const Options& opt, IoOp op) {
  return "--ioengine=io_uring --rw=" + std::string(op_name(op)) + " --bs=" + std::to_string(opt.bs) +
         " --iodepth=" + std::to_string(opt.qd) + " --numjobs=" + std::to_string(opt.streams) +
         " --fallocate=native" + (opt.fio_iomem.empty() ? std::string() : " --iomem=" + opt.fio_iomem);
}

double run_fio(const Tier& tier, bool direct, const Options& opt, IoOp op) {
  const std::filesystem::path dir = bench_dir(tier);
  if (op == IoOp::write) {
    for (unsigned s = 0; s < opt.streams; ++s)
      std::filesystem::remove(dir / ("fio." + std::to_string(s) + ".0"));
  } else if (opt.drop_caches) {
    drop_page_cache();
  }
  const nlohmann::json j = run_fio_command(
      fio_common(opt, op) + " --name=fio --directory=" + shell_quote(dir.string()) +
      " --direct=" + (direct ? "1" : "0") + " --size=" + std::to_string(opt.size) + " --group_reporting");
  return j.at("jobs").at(0).at(op_name(op)).at("bw_bytes").get<double>() / GB;
}

// fio driving every tier at once: one job (x numjobs) per tier, `bytes[t]` each, all started
// together. Returns each tier's GB/s and the aggregate (all bytes / the slowest job's runtime),
// the same figures run_engine gives.
EngineRun run_fio_together(const std::vector<Tier>& tiers, const std::vector<bool>& direct,
                           const Options& opt, IoOp op, const std::vector<std::uint64_t>& bytes) {
  std::string args = fio_common(opt, op);
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    if (bytes[t] == 0) continue;
    const std::filesystem::path dir = bench_dir(tiers[t]);
    if (op == IoOp::write) {
      for (unsigned s = 0; s < opt.streams; ++s) {
        std::filesystem::remove(dir / ("together" + std::to_string(t) + "." + std::to_string(s) + ".0"));
      }
    }
    args += " --name=together" + std::to_string(t) + " --directory=" + shell_quote(dir.string()) +
            " --direct=" + (direct[t] ? "1" : "0") + " --size=" + std::to_string(bytes[t]);
  }
  const nlohmann::json j = run_fio_command(args);
  EngineRun run;
  run.tier_gbps.assign(tiers.size(), 0.0);
  std::vector<double> bytes_done(tiers.size(), 0.0), runtime_ms(tiers.size(), 0.0);
  for (const auto& job : j.at("jobs")) {
    const std::string name = job.at("jobname").get<std::string>();
    const std::size_t t = std::stoul(name.substr(std::string("together").size()));
    const auto& side = job.at(op_name(op));
    bytes_done[t] += side.at("io_bytes").get<double>();
    runtime_ms[t] = std::max(runtime_ms[t], side.at("runtime").get<double>());
  }
  double total = 0, makespan_ms = 0;
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    if (runtime_ms[t] > 0) run.tier_gbps[t] = bytes_done[t] / (runtime_ms[t] / 1e3) / GB;
    total += bytes_done[t];
    makespan_ms = std::max(makespan_ms, runtime_ms[t]);
  }
  run.aggregate_gbps = makespan_ms > 0 ? total / (makespan_ms / 1e3) / GB : 0.0;
  return run;
}

// ---- main ----

std::vector<Tier> parse_tiers(const Options& opt) {
  std::vector<Tier> tiers;
  for (const std::string& spec : opt.tier_specs) {
    const std::size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      throw Error("--tier '" + spec + "': expected NAME=PATH, e.g. --tier nvme=/mnt/nvme");
    }
    Tier t;
    t.name = spec.substr(0, eq);
    t.path = spec.substr(eq + 1);
    t.block_size = opt.bs;
    t.queue_depth = opt.qd * opt.streams;
    t.direct_io = opt.direct;
    t.crc = opt.crc;
    std::error_code ec;
    std::filesystem::create_directories(run_directory(t.path, "bench"), ec);
    if (ec)
      throw Error("tier '" + t.name + "' (" + t.path.string() +
                  "): cannot create its bench directory: " + ec.message());
    tiers.push_back(std::move(t));
  }
  return tiers;
}

int run(const Options& opt) {
  std::vector<Tier> tier_list = parse_tiers(opt);
  const std::size_t n = tier_list.size();
  const unsigned outstanding = buffers_per_stream(opt);
  PinnedBufferPool pool(
      static_cast<std::uint64_t>(n) * opt.streams * outstanding * round_up(opt.request, kIoAlign),
      mlock_hooks(), /*huge_pages=*/!opt.small_pages);
  TierSet tiers(tier_list, {&pool, stderr_diagnostics("mlpo")});

  std::vector<std::uint64_t> need(n, opt.size * opt.streams * (opt.vs_fio ? 2 : 1));
  tiers.check_capacity(need);

  // The mode each tier really runs in (tmpfs falls back to buffered): fio gets the same.
  std::vector<bool> direct(n);
  for (std::size_t t = 0; t < n; ++t) {
    TierFile& probe = tiers[t].open_file(run_file_name("bench", "probe"), 0);
    direct[t] = probe.direct();
    const std::filesystem::path p = probe.path();
    tiers[t].close_file(probe);
    std::filesystem::remove(p);
  }

  if (opt.crc) {
    // Each path over a 64 MiB buffer (memory-bound) and over 256 KiB (one AdamW chunk's array:
    // in cache), 1 GiB in all per figure.
    std::vector<std::byte> data(64 * MiB, std::byte{0x5A});
    using CrcFn = std::uint32_t (*)(const void*, std::size_t, std::uint32_t);
    auto time_crc = [&](CrcFn fn, std::size_t bytes) {
      const auto t0 = Clock::now();
      std::uint32_t crc = 0;
      for (std::size_t done = 0; done < 1024 * MiB; done += bytes) crc = fn(data.data(), bytes, crc);
      volatile std::uint32_t sink = crc;
      (void)sink;
      return static_cast<double>(1024 * MiB) / std::chrono::duration<double>(Clock::now() - t0).count() / GB;
    };
    std::printf("crc32c() takes ISA-L below 1 MiB, then: %s\n", crc32c_path_name(crc32c_path()));
    auto report = [&](const char* name, CrcFn fn) {
      std::printf("crc32c %-28s %6.2f GB/s over 64 MiB, %6.2f GB/s over 256 KiB\n", name,
                  time_crc(fn, 64 * MiB), time_crc(fn, 256 * 1024));
    };
    report("ISA-L crc32_iscsi", &crc32c_isal);
    if (crc32c_avx512_available()) report(crc32c_path_name(Crc32cPath::avx512), &crc32c_avx512);
    if (crc32c_hardware_available()) report(crc32c_path_name(Crc32cPath::sse42), &crc32c_hardware);
    report(crc32c_path_name(Crc32cPath::table), &crc32c_table);
  }

  const IoOp ops[] = {IoOp::write, IoOp::read};
  std::map<std::pair<std::size_t, int>, std::vector<double>> engine, fio;          // (tier, op) -> GB/s
  std::map<std::pair<std::size_t, int>, std::vector<double>> engine_kib, fio_kib;  // device request sizes
  for (unsigned rep = 0; rep < opt.reps; ++rep) {
    for (std::size_t t = 0; t < n; ++t) {
      std::vector<std::uint64_t> bytes(n, 0);
      bytes[t] = opt.size;
      auto engine_pass = [&] {
        for (IoOp op : ops) {
          DeviceRequests dev(tier_list[t].path, op);
          const double g = run_engine(tiers, pool, opt, op, bytes).tier_gbps[t];
          const double kib = dev.average_kib();
          engine[{t, static_cast<int>(op)}].push_back(g);
          engine_kib[{t, static_cast<int>(op)}].push_back(kib);
          std::fprintf(stderr, "rep %u  %-6s %-5s engine %.3f GB/s (device requests %.0f KiB)\n", rep + 1,
                       tier_list[t].name.c_str(), op_name(op), g, kib);
        }
      };
      auto fio_pass = [&] {
        for (IoOp op : ops) {
          DeviceRequests dev(tier_list[t].path, op);
          const double g = run_fio(tier_list[t], direct[t], opt, op);
          const double kib = dev.average_kib();
          fio[{t, static_cast<int>(op)}].push_back(g);
          fio_kib[{t, static_cast<int>(op)}].push_back(kib);
          std::fprintf(stderr, "rep %u  %-6s %-5s fio    %.3f GB/s (device requests %.0f KiB)\n", rep + 1,
                       tier_list[t].name.c_str(), op_name(op), g, kib);
        }
      };
      // Alternate which goes first so drift of the device does not favour one side.
      if (opt.vs_fio && rep % 2 == 1) fio_pass();
      engine_pass();
      if (opt.vs_fio && rep % 2 == 0) fio_pass();
    }
  }

  std::printf("\nper tier: size %s x %u stream(s), bs %s, qd %u, %u reps; GB/s median [min..max]\n",
              format_bytes(static_cast<double>(opt.size)).c_str(), opt.streams,
              format_bytes(static_cast<double>(opt.bs)).c_str(), opt.qd, opt.reps);
  // engine/fio: ratio of the medians. paired: median over repetitions of engine/fio of the
  // same repetition (the two ran back to back), which a device drifting between repetitions
  // moves less.
  std::printf("%-8s %-6s %-7s %-28s %-28s %-11s %-7s %s\n", "tier", "op", "direct", "engine",
              opt.vs_fio ? "fio" : "", opt.vs_fio ? "engine/fio" : "", opt.vs_fio ? "paired" : "",
              "device KiB/request engine|fio");
  for (std::size_t t = 0; t < n; ++t) {
    for (IoOp op : ops) {
      const auto& e_reps = engine[{t, static_cast<int>(op)}];
      const Stats e = stats_of(e_reps);
      if (opt.vs_fio) {
        const auto& f_reps = fio[{t, static_cast<int>(op)}];
        const Stats f = stats_of(f_reps);
        std::vector<double> paired;
        for (std::size_t r = 0; r < e_reps.size() && r < f_reps.size(); ++r)
          paired.push_back(e_reps[r] / f_reps[r]);
        std::printf("%-8s %-6s %-7s %-28s %-28s %-11.3f %-7.3f %.0f|%.0f\n", tier_list[t].name.c_str(),
                    op_name(op), direct[t] ? "on" : "off", fmt(e).c_str(), fmt(f).c_str(),
                    e.median / f.median, stats_of(paired).median,
                    stats_of(engine_kib[{t, static_cast<int>(op)}]).median,
                    stats_of(fio_kib[{t, static_cast<int>(op)}]).median);
      } else {
        std::printf("%-8s %-6s %-7s %-28s\n", tier_list[t].name.c_str(), op_name(op),
                    direct[t] ? "on" : "off", fmt(e).c_str());
      }
    }
  }

  if (opt.together && n > 1) {
    std::printf(
        "\nall %zu tiers at once (bytes split in proportion to each tier's alone median, the fastest gets "
        "%s)\n",
        n, format_bytes(static_cast<double>(opt.size)).c_str());
    std::printf("%-6s %-28s %-28s %s\n", "op", "sum of tiers alone", "together (bytes/makespan)",
                "together/sum");
    // One side (the engine, or fio) driving all tiers at once: each tier gets bytes in
    // proportion to that side's own alone median, so each side gets its best split.
    struct Side {
      const char* name;
      std::vector<double> alone;
      double sum = 0;
      std::vector<std::uint64_t> bytes;
      std::vector<double> aggregate;
      std::vector<std::vector<double>> per_tier;
    };
    auto side_of = [&](const char* name, const auto& medians, IoOp op, std::uint64_t unit) {
      Side side{name, std::vector<double>(n),
                0,    std::vector<std::uint64_t>(n),
                {},   std::vector<std::vector<double>>(n)};
      double fastest = 0;
      for (std::size_t t = 0; t < n; ++t) {
        side.alone[t] = stats_of(medians.at({t, static_cast<int>(op)})).median;
        side.sum += side.alone[t];
        fastest = std::max(fastest, side.alone[t]);
      }
      for (std::size_t t = 0; t < n; ++t) {
        side.bytes[t] = std::max<std::uint64_t>(
            round_up(static_cast<std::uint64_t>(static_cast<double>(opt.size) * side.alone[t] / fastest),
                     unit),
            unit);
      }
      return side;
    };
    auto print_side = [&](const Side& side, IoOp op, const std::string& note) {
      const Stats a = stats_of(side.aggregate);
      char sum_text[64];
      std::snprintf(sum_text, sizeof sum_text, "%6.3f", side.sum);
      std::printf("%-6s %-28s %-28s %.3f   (%s%s)\n", op_name(op), sum_text, fmt(a).c_str(),
                  a.median / side.sum, side.name, note.c_str());
      for (std::size_t t = 0; t < n; ++t) {
        std::printf("         %-8s alone %6.3f, together %s (%s)\n", tier_list[t].name.c_str(), side.alone[t],
                    fmt(stats_of(side.per_tier[t])).c_str(),
                    format_bytes(static_cast<double>(side.bytes[t] * opt.streams)).c_str());
      }
    };
    for (IoOp op : ops) {
      Side mine = side_of("engine", engine, op, opt.request);
      Side theirs = opt.vs_fio ? side_of("fio", fio, op, opt.bs) : Side{};
      for (unsigned rep = 0; rep < opt.reps; ++rep) {
        auto pass = [&](Side& side, const auto& drive) {
          if (op == IoOp::read) drive(IoOp::write, side.bytes);  // files of the right sizes
          const EngineRun r = drive(op, side.bytes);
          side.aggregate.push_back(r.aggregate_gbps);
          for (std::size_t t = 0; t < n; ++t) side.per_tier[t].push_back(r.tier_gbps[t]);
          std::fprintf(stderr, "rep %u  together %-5s %-6s %.3f GB/s\n", rep + 1, op_name(op), side.name,
                       r.aggregate_gbps);
        };
        auto engine_pass = [&] {
          pass(mine, [&](IoOp o, const std::vector<std::uint64_t>& b) {
            return run_engine(tiers, pool, opt, o, b);
          });
        };
        auto fio_pass = [&] {
          pass(theirs, [&](IoOp o, const std::vector<std::uint64_t>& b) {
            return run_fio_together(tier_list, direct, opt, o, b);
          });
        };
        if (opt.vs_fio && rep % 2 == 1) fio_pass();
        engine_pass();
        if (opt.vs_fio && rep % 2 == 0) fio_pass();
      }
      print_side(mine, op, "");
      if (opt.vs_fio) {
        char note[96];
        std::snprintf(note, sizeof note, "; engine together / fio together %.3f",
                      stats_of(mine.aggregate).median / stats_of(theirs.aggregate).median);
        print_side(theirs, op, note);
      }
    }
  }

  for (std::size_t t = 0; t < n; ++t) {
    const TierCounterSnapshot c = tiers[t].counter_snapshot();
    std::printf("%s counters: read %s, written %s, busy %.2f s, retries %llu, errors %llu\n",
                tier_list[t].name.c_str(), format_bytes(static_cast<double>(c.bytes_read)).c_str(),
                format_bytes(static_cast<double>(c.bytes_written)).c_str(), c.busy_s,
                static_cast<unsigned long long>(c.retries), static_cast<unsigned long long>(c.errors));
    std::error_code ec;
    std::filesystem::remove_all(bench_dir(tier_list[t]), ec);
    std::filesystem::remove(runs_directory(tier_list[t].path), ec);  // only when nothing else is in it
  }
  return 0;
}

}  // namespace
}  // namespace mlpo::io

int main(int argc, char** argv) {
  using namespace mlpo;
  io::Options opt;
  std::string size = "2GiB", bs = "1MiB", request = "64MiB", direct = "on", buffer_span = "0";
  CLI::App app{"io_bench: sequential write-then-read throughput of the tier I/O engine (and fio)"};
  app.add_option("--tier", opt.tier_specs, "NAME=PATH of a tier directory (repeatable)")->required();
  app.add_option("--size", size, "bytes per stream file (default 2GiB)");
  app.add_option("--bs", bs, "block size of each I/O (default 1MiB)");
  app.add_option("--qd", opt.qd, "I/Os in flight per stream (default 8)");
  app.add_option("--streams", opt.streams,
                 "concurrent streams (files) per tier, like fio numjobs (default 1)");
  app.add_option("--direct", direct, "O_DIRECT on|off (tmpfs always runs buffered)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--reps", opt.reps, "repetitions (default 3)");
  app.add_option("--request", request, "bytes per engine request, like a subgroup (default 64MiB)");
  app.add_option(
      "--buffer-span", buffer_span,
      "bytes of buffers each stream cycles through, e.g. 8MiB (fio's iodepth x bs) vs 256MiB (default: just "
      "the requests needed in flight); how much memory reads land in matters on a VM");
  app.add_flag(
      "--one-at-a-time", opt.one_at_a_time,
      "wait for each request before issuing the next, as the update pipeline's readers and writers do: the "
      "queue drains at the end of every request (compare with the default, which keeps it full)");
  app.add_flag("--vs-fio", opt.vs_fio, "also run fio with the same parameters and print engine/fio");
  app.add_flag("--together", opt.together, "also drive all tiers at once and compare with the sum alone");
  app.add_flag("--crc", opt.crc, "record and verify CRC32C per request (engine only)");
  app.add_flag("--small-pages", opt.small_pages,
               "back the engine's buffers with 4 KiB pages, not huge pages (as fio's are)");
  app.add_option("--fio-iomem", opt.fio_iomem, "fio's buffer memory (e.g. shmhuge; needs vm.nr_hugepages)");
  app.add_flag("--drop-caches", opt.drop_caches, "drop the page cache before each read pass (root)");
  CLI11_PARSE(app, argc, argv);
  try {
    opt.size = parse_bytes(size, "--size");
    opt.bs = parse_bytes(bs, "--bs");
    opt.request = std::max(parse_bytes(request, "--request"), opt.bs);
    opt.buffer_span = parse_bytes(buffer_span, "--buffer-span");
    opt.direct = direct == "on";
    if (opt.qd == 0 || opt.streams == 0 || opt.reps == 0)
      throw Error("--qd, --streams and --reps must be at least 1");
    if (opt.size % opt.bs != 0) throw Error("--size must be a multiple of --bs, as fio needs");
    return io::run(opt);
  } catch (const Error& e) {
    std::fprintf(stderr, "io_bench: %s\n", e.what());
    return 2;
  }
}
