#include "executor/io/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mlpo::io {
namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t s = 1; s < 8; ++s) {
    for (std::uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = make_tables();

// a(x) * b(x) mod P(x), both reflected (bit 31 is x^0): zlib's multmodp.
std::uint32_t multiply_mod_p(std::uint32_t a, std::uint32_t b) {
  std::uint32_t m = 1u << 31, product = 0;
  for (;;) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8 n) mod P(x): the factor that moves a CRC past n zero bytes.
std::uint32_t x_pow_8n_mod_p(std::uint64_t n) {
  std::uint32_t x2k = 1u << 30;                                // x^1, squared each round: x^(2^k)
  std::uint32_t result = 1u << 31;                             // x^0
  for (int k = 0; k < 3; ++k) x2k = multiply_mod_p(x2k, x2k);  // x^8: one byte
  while (n != 0) {
    if (n & 1) result = multiply_mod_p(x2k, result);
    x2k = multiply_mod_p(x2k, x2k);
    n >>= 1;
  }
  return result;
}

// Multiplication by one fixed factor is linear in the CRC: four byte-indexed tables.
struct ShiftTables {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  explicit ShiftTables(std::uint32_t factor) {
    for (int j = 0; j < 4; ++j)
      for (std::uint32_t v = 0; v < 256; ++v) t[j][v] = multiply_mod_p(factor, v << (8 * j));
  }
  std::uint32_t shift(std::uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

}  // namespace

Crc32cCombiner::Crc32cCombiner(std::uint64_t length_b) : factor_(x_pow_8n_mod_p(length_b)) {}

std::uint32_t Crc32cCombiner::combine(std::uint32_t crc_a, std::uint32_t crc_b) const {
  return multiply_mod_p(factor_, crc_a) ^ crc_b;
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) {
  return Crc32cCombiner(length_b).combine(crc_a, crc_b);
}

std::uint32_t crc32c_table(const void* data, std::size_t size, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (size >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian host
    const std::uint32_t lo = static_cast<std::uint32_t>(word) ^ c;
    const std::uint32_t hi = static_cast<std::uint32_t>(word >> 32);
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

#if defined(__x86_64__)
namespace {

__attribute__((target("sse4.2"))) std::uint32_t crc32c_one_stream(const unsigned char* p, std::size_t size,
                                                                  std::uint32_t crc) {
  std::uint64_t c = ~crc;
  while (size > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
    --size;
  }
  while (size >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  while (size-- > 0) c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
  return ~static_cast<std::uint32_t>(c);
}

// Bytes per stream and round of the three-stream loop: large enough that the two table
// shifts per round (~10 ns) are lost in the 96 KiB checksummed, small enough that the three
// streams stay close together in memory.
constexpr std::size_t kStride = 32 * 1024;

}  // namespace

// The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle: one
// dependent chain runs at a third of the core's rate. Three independent streams over
// adjacent thirds of each 96 KiB round keep it busy every cycle; their CRCs are joined with
// a precomputed shift (crc(ABC) = shift(shift(crc A) ^ crc B) ^ crc C), so the result is the
// one-stream CRC, bit for bit.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_hardware(const void* data, std::size_t size,
                                                                std::uint32_t crc) {
  static const ShiftTables stride_shift(x_pow_8n_mod_p(kStride));
  const auto* p = static_cast<const unsigned char*>(data);
  while (size >= 3 * kStride) {
    std::uint64_t a = ~crc & 0xFFFFFFFFu, b = 0xFFFFFFFFu, c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < kStride; i += 8) {
      std::uint64_t wa, wb, wc;
      std::memcpy(&wa, p + i, 8);
      std::memcpy(&wb, p + kStride + i, 8);
      std::memcpy(&wc, p + 2 * kStride + i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    const auto ca = ~static_cast<std::uint32_t>(a), cb = ~static_cast<std::uint32_t>(b),
               cc = ~static_cast<std::uint32_t>(c);
    crc = stride_shift.shift(stride_shift.shift(ca) ^ cb) ^ cc;
    p += 3 * kStride;
    size -= 3 * kStride;
  }
  return crc32c_one_stream(p, size, crc);
}

__attribute__((target("sse4.2"))) static std::array<std::uint32_t, 3> crc32c_three_hardware(
    const unsigned char* a, const unsigned char* b, const unsigned char* c, std::size_t size) {
  std::uint64_t x = 0xFFFFFFFFu, y = 0xFFFFFFFFu, z = 0xFFFFFFFFu;
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t wa, wb, wc;
    std::memcpy(&wa, a + i, 8);
    std::memcpy(&wb, b + i, 8);
    std::memcpy(&wc, c + i, 8);
    x = _mm_crc32_u64(x, wa);
    y = _mm_crc32_u64(y, wb);
    z = _mm_crc32_u64(z, wc);
  }
  std::array<std::uint32_t, 3> out{~static_cast<std::uint32_t>(x), ~static_cast<std::uint32_t>(y),
                                   ~static_cast<std::uint32_t>(z)};
  if (i < size) {
    out[0] = crc32c_one_stream(a + i, size - i, out[0]);
    out[1] = crc32c_one_stream(b + i, size - i, out[1]);
    out[2] = crc32c_one_stream(c + i, size - i, out[2]);
  }
  return out;
}

bool crc32c_hardware_available() { return __builtin_cpu_supports("sse4.2"); }
#else
std::uint32_t crc32c_hardware(const void* data, std::size_t size, std::uint32_t crc) {
  return crc32c_table(data, size, crc);
}
bool crc32c_hardware_available() { return false; }
#endif

std::array<std::uint32_t, 3> crc32c_three(const void* a, const void* b, const void* c, std::size_t size) {
#if defined(__x86_64__)
  static const bool hardware = crc32c_hardware_available();
  if (hardware)
    return crc32c_three_hardware(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b),
                                 static_cast<const unsigned char*>(c), size);
#endif
  return {crc32c_table(a, size), crc32c_table(b, size), crc32c_table(c, size)};
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  // Function-local constant: initialised once, thread-safe, never written again.
  static const bool hardware = crc32c_hardware_available();
  return hardware ? crc32c_hardware(data, size, crc) : crc32c_table(data, size, crc);
}

}  // namespace mlpo::io
