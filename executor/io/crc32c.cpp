#include "executor/io/crc32c.hpp"

#include "core/crc32c_polynomial.hpp"

#include <isa-l/crc.h>

#include <array>
#include <climits>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mlpo::io {
namespace {

constexpr std::uint32_t kPoly = kCrc32cPolynomial;

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

// x^(8 n) mod P(x): the factor that moves a CRC past n zero bytes.
std::uint32_t x_pow_8n_mod_p(std::uint64_t n) { return crc32c_x_pow_mod_p(8 * n); }

// Multiplication by one fixed factor is linear in the CRC: four byte-indexed tables.
struct ShiftTables {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  explicit ShiftTables(std::uint32_t factor) {
    for (int j = 0; j < 4; ++j)
      for (std::uint32_t v = 0; v < 256; ++v) t[j][v] = crc32c_multiply_mod_p(factor, v << (8 * j));
  }
  std::uint32_t shift(std::uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

}  // namespace

Crc32cCombiner::Crc32cCombiner(std::uint64_t length_b) : factor_(x_pow_8n_mod_p(length_b)) {}

std::uint32_t Crc32cCombiner::combine(std::uint32_t crc_a, std::uint32_t crc_b) const {
  return crc32c_multiply_mod_p(factor_, crc_a) ^ crc_b;
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

// Folding with carry-less multiplication (VPCLMULQDQ on 512-bit registers).
//
// The math. In the reflected convention a 16-byte block B loaded little-endian into a 128-bit
// register is the polynomial B(x) = sum of bit b times x^(127-b) (byte 0, bit 0 is the highest
// degree), and the CRC of a message M of N bytes is M(x) x^32 mod P(x) (the initial and final
// inversions aside: the incoming CRC is xored into the first 4 bytes). A block that is followed
// by D more bytes contributes B(x) x^(8 D) to M(x), so it may be replaced by any polynomial
// congruent to B(x) x^(8 D) mod P, xored into the block D bytes later ("folding"). Split
// B = H x^64 + L, H the register's low 64 bits (the high degrees), L its high 64 bits:
//   B x^(8D) = H x^(8D+64) + L x^(8D)  ==  H (x^(8D+64) mod P) + L (x^(8D) mod P)   (mod P),
// two products of degree < 96 that fit a 128-bit register. PCLMULQDQ multiplies 64-bit halves
// without carries: for a (bit i = x^(63-i)) and a 32-bit constant c stored with bit j =
// x^(31-j) -- the reflected form of the table code and core/crc32c_polynomial -- product bit k is
// the coefficient of x^(94-k), i.e. the 128-bit register (bit k = x^(127-k)) holds a(x) c(x)
// x^33. So the constants are c = x^(8D+64-33) mod P for the low half and x^(8D-33) mod P for
// the high half, computed with core/crc32c_polynomial's crc32c_fold_pair() (no magic numbers to trust).
//
// The loop keeps four 512-bit accumulators (256 bytes, sixteen 128-bit lanes) folded by
// D = 256; at the end they are folded into one (D = 64), the one's four lanes into one 128-bit
// register (D = 16), which is folded over the remaining whole 16-byte blocks. Its CRC
// (B(x) x^32 mod P) is what the crc32 instruction computes from a zero state over its 16
// bytes; the tail bytes (< 16) continue from there with the crc32 instruction.
namespace {

struct FoldConstants {
  std::uint64_t by256[2], by64[2], by16[2];  // {low half: x^(8D+31), high half: x^(8D-33)} mod P
  FoldConstants() {
    auto set = [](std::uint64_t(&k)[2], std::uint64_t d) {
      const Crc32cFoldPair pair = crc32c_fold_pair(d);
      k[0] = pair.low;
      k[1] = pair.high;
    };
    set(by256, 256);
    set(by64, 64);
    set(by16, 16);
  }
};

// x folded D bytes forward (k: D's constants in every 128-bit lane) and xored with `next`.
__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                   next, 0x96);  // three-way xor
}

__attribute__((target("pclmul,sse2"))) inline __m128i fold128(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)),
                       next);
}

// 128-bit lane i of x (the zero-masking form: GCC 12 warns about the unmasked one's
// "undefined" source operand under -Werror).
template <int I>
__attribute__((target("avx512f"))) inline __m128i lane(__m512i x) {
  return _mm512_maskz_extracti32x4_epi32(0xF, x, I);
}

// D's constants in every 128-bit lane.
__attribute__((target("avx512f"))) inline __m512i lanes(const std::uint64_t (&k)[2]) {
  const auto lo = static_cast<long long>(k[0]), hi = static_cast<long long>(k[1]);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

}  // namespace

__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) std::uint32_t crc32c_avx512(const void* data,
                                                                                        std::size_t size,
                                                                                        std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (size < 256) return crc32c_one_stream(p, size, crc);
  static const FoldConstants constants;
  const __m512i k256 = lanes(constants.by256), k64 = lanes(constants.by64);
  __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128),
          x3 = _mm512_loadu_si512(p + 192);
  x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  p += 256;
  size -= 256;
  for (; size >= 256; p += 256, size -= 256) {
    x0 = fold512(x0, k256, _mm512_loadu_si512(p));
    x1 = fold512(x1, k256, _mm512_loadu_si512(p + 64));
    x2 = fold512(x2, k256, _mm512_loadu_si512(p + 128));
    x3 = fold512(x3, k256, _mm512_loadu_si512(p + 192));
  }
  __m512i x = fold512(fold512(fold512(x0, k64, x1), k64, x2), k64, x3);
  for (; size >= 64; p += 64, size -= 64) x = fold512(x, k64, _mm512_loadu_si512(p));
  const __m128i k16 =
      _mm_set_epi64x(static_cast<long long>(constants.by16[1]), static_cast<long long>(constants.by16[0]));
  __m128i y = fold128(lane<0>(x), k16, lane<1>(x));
  y = fold128(y, k16, lane<2>(x));
  y = fold128(y, k16, lane<3>(x));
  for (; size >= 16; p += 16, size -= 16)
    y = fold128(y, k16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  std::uint64_t c = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(y)));
  c = _mm_crc32_u64(c, static_cast<std::uint64_t>(_mm_extract_epi64(y, 1)));
  return crc32c_one_stream(p, size, ~static_cast<std::uint32_t>(c));
}

bool crc32c_avx512_available() {
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("vpclmulqdq");
}
#else
std::uint32_t crc32c_hardware(const void* data, std::size_t size, std::uint32_t crc) {
  return crc32c_table(data, size, crc);
}
bool crc32c_hardware_available() { return false; }
std::uint32_t crc32c_avx512(const void* data, std::size_t size, std::uint32_t crc) {
  return crc32c_table(data, size, crc);
}
bool crc32c_avx512_available() { return false; }
#endif

std::array<std::uint32_t, 3> crc32c_three(const void* a, const void* b, const void* c, std::size_t size) {
#if defined(__x86_64__)
  static const Crc32cPath path = crc32c_path();
  // Folding runs each buffer at several times the three interleaved crc32 streams' rate.
  if (path == Crc32cPath::avx512 && size >= 1024)
    return {crc32c_avx512(a, size), crc32c_avx512(b, size), crc32c_avx512(c, size)};
  if (path != Crc32cPath::table)
    return crc32c_three_hardware(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b),
                                 static_cast<const unsigned char*>(c), size);
#endif
  return {crc32c_table(a, size), crc32c_table(b, size), crc32c_table(c, size)};
}

Crc32cPath crc32c_path() {
  if (crc32c_avx512_available()) return Crc32cPath::avx512;
  if (crc32c_hardware_available()) return Crc32cPath::sse42;
  return Crc32cPath::table;
}

const char* crc32c_path_name(Crc32cPath path) {
  constexpr std::array<const char*, 3> kNames{
      // in Crc32cPath's order
      "VPCLMULQDQ folding (AVX-512)", "SSE4.2 crc32, three streams", "table (slicing-by-8)"};
  const auto i = static_cast<std::size_t>(path);
  return i < kNames.size() ? kNames[i] : "?";
}

std::uint32_t crc32c_isal(const void* data, std::size_t size, std::uint32_t crc) {
  // ISA-L neither inverts on entry nor on exit, and takes an int length.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));  // ISA-L only reads it
  std::uint32_t c = ~crc;
  while (size > 0) {
    const std::size_t n = size < static_cast<std::size_t>(INT_MAX) ? size : std::size_t{1} << 30;
    c = crc32_iscsi(p, static_cast<int>(n), c);
    p += n;
    size -= n;
  }
  return ~c;
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  if (size < kCrc32cIsalBelowBytes) return crc32c_isal(data, size, crc);
  // Function-local constant: initialised once, thread-safe, never written again.
  static const Crc32cPath path = crc32c_path();
  switch (path) {
    case Crc32cPath::avx512:
      return crc32c_avx512(data, size, crc);
    case Crc32cPath::sse42:
      return crc32c_hardware(data, size, crc);
    case Crc32cPath::table:
      break;
  }
  return crc32c_table(data, size, crc);
}

}  // namespace mlpo::io
