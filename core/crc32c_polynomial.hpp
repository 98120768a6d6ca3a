#pragma once
// Arithmetic modulo the CRC32C (Castagnoli) polynomial, in the reflected convention the
// checksum uses (bit 31 of a value is x^0): what combining two CRCs and the constants of a
// carry-less folding loop are made of. Shared by the CRC code of the I/O engine
// (executor/io/crc32c) and AdamW's fused check (kernels/cpu/adamw_crc), which derive their
// constants from it instead of carrying magic numbers.

#include <cstdint>

namespace mlpo {

inline constexpr std::uint32_t kCrc32cPolynomial = 0x82F63B78u;  // reflected

// a(x) * b(x) mod P(x), both reflected (zlib's multmodp).
std::uint32_t crc32c_multiply_mod_p(std::uint32_t a, std::uint32_t b);

// x^e mod P(x), reflected, by square and multiply.
std::uint32_t crc32c_x_pow_mod_p(std::uint64_t e);

// The two constants that fold a 128-bit block D bytes forward with PCLMULQDQ:
// {low half: x^(8D+31) mod P, high half: x^(8D-33) mod P} (executor/io/crc32c.cpp derives why).
struct Crc32cFoldPair {
  std::uint64_t low, high;
};
Crc32cFoldPair crc32c_fold_pair(std::uint64_t distance_bytes);

}  // namespace mlpo
