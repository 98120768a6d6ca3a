#pragma once
// bfloat16 storage type and its conversions. Weights and gradients travel as bf16; all
// arithmetic happens in fp32. float -> bf16 rounds to nearest even (NaN stays NaN), the
// same rule cuBLAS and PyTorch use, so the CPU and CUDA backends agree bit for bit.

#include <cstdint>
#include <cstring>

namespace mlpo {

struct bf16 {
  std::uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2);

inline float bf16_to_float(bf16 h) {
  std::uint32_t u = static_cast<std::uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline bf16 float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                 // round to nearest, ties to even
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

}  // namespace mlpo
