#include "core/crc32c_polynomial.hpp"

namespace mlpo {

std::uint32_t crc32c_multiply_mod_p(std::uint32_t a, std::uint32_t b) {
  std::uint32_t m = 1u << 31, product = 0;
  for (;;) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kCrc32cPolynomial : b >> 1;
  }
  return product;
}

std::uint32_t crc32c_x_pow_mod_p(std::uint64_t e) {
  std::uint32_t x2k = 1u << 30;     // x^1, squared each round: x^(2^k)
  std::uint32_t result = 1u << 31;  // x^0
  while (e != 0) {
    if (e & 1) result = crc32c_multiply_mod_p(x2k, result);
    x2k = crc32c_multiply_mod_p(x2k, x2k);
    e >>= 1;
  }
  return result;
}

Crc32cFoldPair crc32c_fold_pair(std::uint64_t distance_bytes) {
  return {crc32c_x_pow_mod_p(8 * distance_bytes + 31), crc32c_x_pow_mod_p(8 * distance_bytes - 33)};
}

}  // namespace mlpo
