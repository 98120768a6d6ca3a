#pragma once
// CRC32C (Castagnoli), the checksum the engine records per written extent and verifies on
// read. Picks at run time (once) the fastest of: folding with VPCLMULQDQ on AVX-512 registers,
// the SSE4.2 crc32 instruction, a slicing-by-8 table; all give identical results.
// Buffers under 256 bytes take the crc32 instruction; SSE4.2 interleaves three streams over
// buffers of 96 KiB and more. The speed of each path (io_bench --crc): docs/benchmarks.md,
// "CRC32C".

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

// The implementations, exposed so tests can compare them and the benchmark can time them.
// crc32c() and crc32c_three() use the fastest this CPU has (crc32c_path(), checked once at
// run time; the binary needs no AVX-512 to run): all give identical results.
std::uint32_t crc32c_table(const void* data, std::size_t size, std::uint32_t crc = 0);
std::uint32_t crc32c_hardware(const void* data, std::size_t size, std::uint32_t crc = 0);  // needs SSE4.2
bool crc32c_hardware_available();
// Folding with VPCLMULQDQ on 512-bit registers (needs AVX-512F, VPCLMULQDQ and SSE4.2).
std::uint32_t crc32c_avx512(const void* data, std::size_t size, std::uint32_t crc = 0);
bool crc32c_avx512_available();

enum class Crc32cPath { avx512, sse42, table };
Crc32cPath crc32c_path();  // the path crc32c() takes on this CPU
const char* crc32c_path_name(Crc32cPath path);

}  // namespace mlpo::io
