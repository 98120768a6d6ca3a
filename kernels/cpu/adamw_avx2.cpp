// AVX2 AdamW: 8 elements per iteration. The tail (< 8 elements) is copied into zero-padded stack
// blocks, run through the same 8-lane code and copied back, so it gets the very same
// instructions. Compiled with -mavx2 -ffp-contract=off; called only after the dispatcher saw AVX2.
// Operation order: adamw_variants.hpp.

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/adamw_lanes_avx2.hpp"
#include "kernels/cpu/adamw_variants.hpp"

namespace mlpo::detail {
namespace {

template <class Grad>
void adamw_avx2(const AdamWConstants& constants, float* p, float* m, float* v, const Grad* grad, bf16* p_out,
                std::size_t n) {
  const Lanes c(constants);
  std::size_t i = 0;
  if (p_out) {
    for (; i + 8 <= n; i += 8) update8(c, p + i, m + i, v + i, p + i, m + i, v + i, grad + i, p_out + i);
  } else {
    for (; i + 8 <= n; i += 8) update8(c, p + i, m + i, v + i, p + i, m + i, v + i, grad + i, nullptr);
  }
  if (i == n) return;
  const std::size_t rest = n - i;
  float tp[8] = {}, tm[8] = {}, tv[8] = {};
  Grad tg[8] = {};
  bf16 to[8] = {};
  std::memcpy(tp, p + i, rest * sizeof(float));
  std::memcpy(tm, m + i, rest * sizeof(float));
  std::memcpy(tv, v + i, rest * sizeof(float));
  std::memcpy(tg, grad + i, rest * sizeof(Grad));
  update8(c, tp, tm, tv, tp, tm, tv, tg, p_out ? to : nullptr);
  std::memcpy(p + i, tp, rest * sizeof(float));
  std::memcpy(m + i, tm, rest * sizeof(float));
  std::memcpy(v + i, tv, rest * sizeof(float));
  if (p_out) std::memcpy(p_out + i, to, rest * sizeof(bf16));
}

}  // namespace

void adamw_bf16grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const bf16* grad, bf16* p_out,
                         std::size_t n) {
  adamw_avx2(c, p, m, v, grad, p_out, n);
}

void adamw_fp32grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const float* grad,
                         bf16* p_out, std::size_t n) {
  adamw_avx2(c, p, m, v, grad, p_out, n);
}

}  // namespace mlpo::detail
