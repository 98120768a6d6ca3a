// crc_bench: the speed of every CRC32C implementation the engine has, one thread, on the same
// buffers: Intel ISA-L's crc32_iscsi against the project's own paths (VPCLMULQDQ folding on
// AVX-512 where the CPU has it, the SSE4.2 crc32 instruction on three interleaved streams, the
// slicing-by-8 table), per buffer size, in cache and streaming from memory; and the three
// arrays of a subgroup chunk (p, m, v) as the update pipeline checksums them, crc32c_three
// against three ISA-L calls. What it measures decides which path crc32c() takes at which size
// (executor/io/crc32c.hpp).
//
//   crc_bench [--sizes 4KiB,64KiB,256KiB,1MiB,4MiB] [--gib 1] [--reps 3]
//
// In cache: the same buffer of that size again and again, GIB GiB in all. Streaming: a
// 1 GiB buffer (three of 1/3 GiB for the three-array rows) walked once in pieces of that size,
// so every byte comes from memory. Each figure is the median of REPS such passes, in GB/s;
// every result is checked against the table.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/crc32c.hpp"

namespace mlpo::io {
namespace {

using Clock = std::chrono::steady_clock;
using CrcFn = std::uint32_t (*)(const void*, std::size_t, std::uint32_t);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GB/s of `pass`, which moves `bytes`; the median of `reps` passes.
double rate(unsigned reps, double bytes, const std::function<void()>& pass) {
  std::vector<double> r;
  for (unsigned i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    pass();
    r.push_back(bytes / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
  }
  return median(r);
}

struct Path {
  const char* name;
  CrcFn fn;
};

std::vector<Path> paths() {
  std::vector<Path> out{{"ISA-L crc32_iscsi", &crc32c_isal}};
  if (crc32c_avx512_available()) out.push_back({crc32c_path_name(Crc32cPath::avx512), &crc32c_avx512});
  if (crc32c_hardware_available()) out.push_back({crc32c_path_name(Crc32cPath::sse42), &crc32c_hardware});
  out.push_back({crc32c_path_name(Crc32cPath::table), &crc32c_table});
  return out;
}

void one_buffer(const std::vector<std::size_t>& sizes, std::uint64_t total, unsigned reps,
                const std::vector<unsigned char>& memory) {
  std::printf("one buffer, 1 thread (GB/s)\n%-10s %-34s %10s %10s\n", "size", "path", "in cache",
              "streaming");
  for (std::size_t size : sizes) {
    const std::uint32_t want = crc32c_table(memory.data(), size);
    for (const Path& path : paths()) {
      if (path.fn(memory.data(), size, 0) != want)
        throw Error(std::string(path.name) + " disagrees with the table");
      // The table is ~15x slower: an eighth of the bytes keeps its rows short.
      const std::uint64_t bytes = path.fn == &crc32c_table ? total / 8 : total;
      volatile std::uint32_t sink = 0;
      const double cached = rate(reps, static_cast<double>(bytes / size * size), [&] {
        for (std::uint64_t done = 0; done + size <= bytes; done += size)
          sink = path.fn(memory.data(), size, sink);
      });
      const std::size_t walk = (path.fn == &crc32c_table ? memory.size() / 8 : memory.size()) / size * size;
      const double streamed = rate(reps, static_cast<double>(walk), [&] {
        for (std::size_t off = 0; off < walk; off += size) sink = path.fn(memory.data() + off, size, sink);
      });
      std::printf("%-10s %-34s %10.2f %10.2f\n", format_bytes(static_cast<double>(size)).c_str(), path.name,
                  cached, streamed);
    }
  }
}

void three_arrays(const std::vector<std::size_t>& sizes, std::uint64_t total, unsigned reps,
                  const std::vector<unsigned char>& memory) {
  std::printf("\nthree arrays (a chunk's p, m, v), 1 thread (GB/s of all three)\n%-10s %-34s %10s %10s\n",
              "size each", "call", "in cache", "streaming");
  const std::size_t region = memory.size() / 3;
  const unsigned char* a = memory.data();
  const unsigned char* b = a + region;
  const unsigned char* c = b + region;
  using ThreeFn =
      std::function<std::array<std::uint32_t, 3>(const void*, const void*, const void*, std::size_t)>;
  const std::pair<const char*, ThreeFn> calls[] = {
      {"crc32c_three (the project's)", &crc32c_three},
      {"three ISA-L calls",
       [](const void* x, const void* y, const void* z, std::size_t n) {
         return std::array<std::uint32_t, 3>{crc32c_isal(x, n), crc32c_isal(y, n), crc32c_isal(z, n)};
       }},
  };
  for (std::size_t size : sizes) {
    const std::array<std::uint32_t, 3> want{crc32c_table(a, size), crc32c_table(b, size),
                                            crc32c_table(c, size)};
    for (const auto& [name, fn] : calls) {
      if (fn(a, b, c, size) != want) throw Error(std::string(name) + " disagrees with the table");
      volatile std::uint32_t sink = 0;
      const std::uint64_t step = 3 * size;
      const double cached = rate(reps, static_cast<double>(total / step * step), [&] {
        for (std::uint64_t done = 0; done + step <= total; done += step) sink = sink + fn(a, b, c, size)[0];
      });
      const std::size_t walk = region / size * size;
      const double streamed = rate(reps, 3.0 * static_cast<double>(walk), [&] {
        for (std::size_t off = 0; off < walk; off += size)
          sink = sink + fn(a + off, b + off, c + off, size)[1];
      });
      std::printf("%-10s %-34s %10.2f %10.2f\n", format_bytes(static_cast<double>(size)).c_str(), name,
                  cached, streamed);
    }
  }
}

int run(int argc, char** argv) {
  CLI::App app{
      "crc_bench: CRC32C speed per implementation (ISA-L and the project's own), one thread, in cache "
      "and streaming from memory, on one buffer and on a chunk's three arrays"};
  std::vector<std::string> size_text{"4KiB", "64KiB", "256KiB", "1MiB", "4MiB"};
  double gib = 1.0;
  unsigned reps = 3;
  app.add_option("--sizes", size_text, "buffer sizes (each array's for the three-array rows)")
      ->delimiter(',');
  app.add_option("--gib", gib, "GiB checksummed per in-cache figure")->check(CLI::Range(0.01, 64.0));
  app.add_option("--reps", reps, "passes per figure (the median is printed)")->check(CLI::Range(1u, 99u));
  CLI11_PARSE(app, argc, argv);
  std::vector<std::size_t> sizes;
  for (const std::string& s : size_text) {
    const auto bytes = parse_bytes(s, "--sizes");
    if (bytes < 64 || bytes > 64 * MiB)
      throw Error("--sizes: " + s + " is outside 64 B..64 MiB; give sizes like 4KiB,1MiB");
    sizes.push_back(static_cast<std::size_t>(bytes));
  }
  std::vector<unsigned char> memory(1 * GiB);
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<unsigned char>(i * 131 + 7);
  const auto total = static_cast<std::uint64_t>(gib * static_cast<double>(GiB));
  std::printf("crc32c() takes ISA-L below %s, then: %s\n\n",
              format_bytes(static_cast<double>(kCrc32cIsalBelowBytes)).c_str(),
              crc32c_path_name(crc32c_path()));
  one_buffer(sizes, total, reps, memory);
  three_arrays(sizes, total, reps, memory);
  return 0;
}

}  // namespace
}  // namespace mlpo::io

int main(int argc, char** argv) {
  try {
    return mlpo::io::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crc_bench: %s\n", e.what());
    return 2;
  }
}
