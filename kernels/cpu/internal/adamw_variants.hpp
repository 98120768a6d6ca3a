#pragma once
// Internal to kernels/cpu: the per-ISA loops behind adamw.hpp and convert.hpp, and the AdamW
// constants they share.
//
// Bitwise agreement between variants rests on three rules, kept by every variant:
//  1. The constants below are computed once, in adamw.cpp, and every variant reads the same
//     fp32 values (bias corrections in double, cast once).
//  2. Per element, every variant performs exactly this sequence of fp32 operations, each a
//     correctly rounded IEEE operation (mul, add, div, sqrt), with no FMA contraction (the ISA
//     translation units are compiled with -ffp-contract=off):
//        g     = grad * grad_scale
//        m     = beta1*m + one_minus_beta1*g
//        v     = beta2*v + one_minus_beta2*(g*g)
//        mhat  = m / bias_correction1
//        vhat  = v / bias_correction2
//        step  = lr * (mhat / (sqrt(vhat) + eps))
//        p     = p - (lr_times_wd*p + step)
//  3. Tails (n not a multiple of the width) run the same vector code (masked lanes on AVX-512,
//     a padded copy on AVX2), so an element's result never depends on where a range starts.
//
// Why p is rounded once per step: PyTorch's `p *= 1 - lr*wd` first rounds the factor 1 - lr*wd
// to fp32 (an error of up to 2^-25 relative, the same sign at every step) and then rounds p twice
// per step. Over 20 steps that alone can drift p by ~1e-6 relative from the exact AdamW, the
// whole tolerance. Folding decay and step into one subtraction rounds p once per step and keeps
// the decay term's rounding at the scale of lr*wd*p (~1e-5 of p), not of p.
//
// The ISA translation units use no standard-library templates or inline functions from shared
// headers: an out-of-line copy compiled with -mavx512f could be the one the linker keeps and then
// run on a CPU without AVX-512. Their helpers have internal linkage.

#include <cstddef>
#include <cstdint>

#include "core/bf16.hpp"

namespace mlpo {
struct AdamWParams;
}  // namespace mlpo

namespace mlpo::detail {

struct AdamWConstants {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float bias_correction1, bias_correction2;  // 1 - beta^step
  float lr, lr_times_wd, eps, grad_scale;
};

// The constants of `params` (validated), as every variant reads them (adamw.cpp).
AdamWConstants make_adamw_constants(const AdamWParams& params);

void adamw_bf16grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const bf16* grad, bf16* p_out,
                         std::size_t n);
void adamw_fp32grad_avx2(const AdamWConstants& c, float* p, float* m, float* v, const float* grad,
                         bf16* p_out, std::size_t n);
void adamw_bf16grad_avx512(const AdamWConstants& c, float* p, float* m, float* v, const bf16* grad,
                           bf16* p_out, std::size_t n);
void adamw_fp32grad_avx512(const AdamWConstants& c, float* p, float* m, float* v, const float* grad,
                           bf16* p_out, std::size_t n);

// AdamW with the CRC32C of what it loads and stores (adamw_crc.hpp), AVX2 + VPCLMULQDQ. The
// folding constants come from core/crc32c_polynomial (computed in the baseline unit, so the
// ISA unit calls nothing shared). crcs: p, m, v before, then p, m, v after.
struct CrcFoldConstants {
  std::uint64_t by32[2], by16[2];  // {low half, high half} for a fold of 32 and of 16 bytes
};
void adamw_crc_bf16grad_avx2(const AdamWConstants& c, const CrcFoldConstants& k, const float* p_in,
                             const float* m_in, const float* v_in, float* p, float* m, float* v,
                             const bf16* grad, bf16* p_out, std::size_t n, std::uint32_t crcs[6]);
void adamw_crc_fp32grad_avx2(const AdamWConstants& c, const CrcFoldConstants& k, const float* p_in,
                             const float* m_in, const float* v_in, float* p, float* m, float* v,
                             const float* grad, bf16* p_out, std::size_t n, std::uint32_t crcs[6]);

void bf16_to_fp32_avx2(const bf16* src, float* dst, std::size_t n);
void fp32_to_bf16_avx2(const float* src, bf16* dst, std::size_t n);
void bf16_to_fp32_avx512(const bf16* src, float* dst, std::size_t n);
void fp32_to_bf16_avx512(const float* src, bf16* dst, std::size_t n);

}  // namespace mlpo::detail
