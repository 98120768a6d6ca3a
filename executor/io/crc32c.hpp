#pragma once
// CRC32C (Castagnoli), the checksum the engine records per written extent and verifies on
// read. Buffers under 1 MiB go to Intel ISA-L's crc32_iscsi (libisal, which picks its own
// folding code at run time); 1 MiB and over, and the three arrays of a subgroup chunk, take
// the fastest of the project's paths: folding with VPCLMULQDQ on AVX-512 registers, the SSE4.2
// crc32 instruction on three interleaved streams, a slicing-by-8 table. That split is what
// crc_bench measured (docs/benchmarks.md, "CRC32C from ISA-L"): on an AVX2 CPU ISA-L is 1.0-2.9x
// the SSE4.2 path on one buffer in cache at 4 KiB-1 MiB, and 0.7-0.9x of it streaming from
// memory at 1 MiB and over and on three arrays at once. All give identical results.

#include <array>
#include <cstddef>
#include <cstdint>

namespace mlpo::io {

// CRC32C of [data, data+size). Pass a previous result as `crc` to extend it:
// crc32c(b, n2, crc32c(a, n1)) == crc32c of a followed by b.
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

// The CRC32C of a followed by b, from crc32c(a), crc32c(b) and b's length (zlib's
// crc32_combine for the Castagnoli polynomial). Lets pieces of one extent be checksummed
// apart (as each block of a transfer completes) and joined in order.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b);

// crc32c_combine for one fixed length_b, with its factor computed once (~60 ns per combine
// instead of ~1 us).
class Crc32cCombiner {
 public:
  explicit Crc32cCombiner(std::uint64_t length_b);
  std::uint32_t combine(std::uint32_t crc_a, std::uint32_t crc_b) const;

 private:
  std::uint32_t factor_;
};

// The CRC32C of each of three buffers of `size` bytes, computed as three interleaved streams
// (the three-stream rate for pieces too small to be split): a subgroup chunk's p, m and v.
std::array<std::uint32_t, 3> crc32c_three(const void* a, const void* b, const void* c, std::size_t size);

// Buffers under this many bytes go to ISA-L in crc32c().
inline constexpr std::size_t kCrc32cIsalBelowBytes = std::size_t{1} << 20;

// The implementations, exposed so tests can compare them and the benchmark can time them.
std::uint32_t crc32c_isal(const void* data, std::size_t size, std::uint32_t crc = 0);  // Intel ISA-L
// crc32c() and crc32c_three() use the fastest this CPU has (crc32c_path(), checked once at
// run time; the binary needs no AVX-512 to run): all give identical results.
std::uint32_t crc32c_table(const void* data, std::size_t size, std::uint32_t crc = 0);
std::uint32_t crc32c_hardware(const void* data, std::size_t size, std::uint32_t crc = 0);  // needs SSE4.2
bool crc32c_hardware_available();
// Folding with VPCLMULQDQ on 512-bit registers (needs AVX-512F, VPCLMULQDQ and SSE4.2).
std::uint32_t crc32c_avx512(const void* data, std::size_t size, std::uint32_t crc = 0);
bool crc32c_avx512_available();

enum class Crc32cPath { avx512, sse42, table };
Crc32cPath crc32c_path();  // the path crc32c() takes on this CPU from kCrc32cIsalBelowBytes up
const char* crc32c_path_name(Crc32cPath path);

}  // namespace mlpo::io
