#pragma once
// IEEE 754 binary16 ("fp16", safetensors dtype F16) <-> fp32, for importing Hugging Face
// checkpoints saved in half precision. fp16 -> fp32 is exact (subnormals, infinities and NaN
// included); fp32 -> fp16 rounds to nearest even, overflows to infinity above 65504 and keeps
// NaN a (quiet) NaN. Scalar: import is bound by the file reads, not by this.

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mlpo {

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  std::uint32_t u;
  if (exponent == 0x1f) {
    u = sign | 0x7f800000u | (mantissa << 13);  // infinity, NaN (payload kept)
  } else if (exponent != 0) {
    u = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    u = sign;
  } else {  // subnormal: mantissa x 2^-24, normalised into fp32
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    u = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint16_t float_to_fp16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // quiet NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (a >= 0x38800000u) {                                                   // normal: >= 2^-14
    std::uint32_t r = a - 0x38000000u;                                      // exponent rebased 127 -> 15
    r += 0x0fffu + ((r >> 13) & 1u);                                        // round to nearest, ties to even
    return static_cast<std::uint16_t>(sign | (r >> 13));
  }
  float magnitude;
  std::memcpy(&magnitude, &a, sizeof magnitude);
  // Subnormal or zero: the value in units of 2^-24, rounded to nearest even (the default mode).
  return static_cast<std::uint16_t>(sign |
                                    static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0f)));
}

}  // namespace mlpo
