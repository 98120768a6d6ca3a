// AVX2 AdamW: 8 elements per iteration (adamw_lanes_avx2.hpp), the tail (< 8 elements) through
// the same 8-lane code. Compiled with -mavx2 -ffp-contract=off; called only after the dispatcher saw AVX2.
// Operation order: adamw_variants.hpp.

#include <immintrin.h>

#include "kernels/cpu/internal/adamw_lanes_avx2.hpp"
#include "kernels/cpu/internal/adamw_variants.hpp"

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
  if (i < n)
    update_tail(c, p + i, m + i, v + i, p + i, m + i, v + i, grad + i, p_out ? p_out + i : nullptr, n - i);
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
