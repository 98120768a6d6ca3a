#pragma once
// Fused CPU AdamW: the update step of the offload engine. One pass over a contiguous range reads
// the gradient (bf16, converted to fp32 in registers -- the "delayed in-place conversion" -- or
// fp32 for the baseline mode that re-reads fp32 gradients from storage) and the fp32 master
// weights p and moments m, v; it writes p, m, v in place and, when asked, the bf16 copy of p that
// goes back to the device. Semantics are PyTorch's AdamW (decoupled weight decay, bias
// correction), with the gradient multiplied by `grad_scale` first (global-norm clipping):
//
//   g = grad * grad_scale
//   m = beta1*m + (1-beta1)*g          mhat = m / (1 - beta1^step)
//   v = beta2*v + (1-beta2)*g*g        vhat = v / (1 - beta2^step)
//   p = p - (lr*weight_decay*p + lr * mhat / (sqrt(vhat) + eps))
//
// The last line is PyTorch's `p *= 1 - lr*wd; p -= lr*mhat/(sqrt(vhat)+eps)` with p rounded once
// per step instead of twice (see adamw_variants.hpp for why that matters at 1e-6 over 20 steps).
//
// Guarantees:
//  - Every element is computed by the same sequence of IEEE fp32 operations (no FMA contraction)
//    in the scalar, AVX2 and AVX-512 variants, so all variants give bitwise-identical results, and
//    results do not depend on the thread count, the split of the range, pointer alignment, or
//    which subgroup is processed when.
//  - p_out[i] == float_to_bf16(p[i]) (round to nearest even) after the update.
//  - Bias corrections are computed once per call in double and cast to fp32 once.
// Cost: memory-bound; bytes moved per element are adamw_bytes_per_element(). Buffers are owned by
// the caller; ranges must not overlap (p, m, v, grad, p_out are distinct arrays).

#include <cstddef>
#include <cstdint>

#include "core/adam_split.hpp"
#include "core/bf16.hpp"
#include "kernels/cpu/adamw_isa.hpp"

namespace mlpo {

class ThreadPool;

struct AdamWParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float grad_scale = 1.0f;  // multiplies the raw gradient (1 / clip factor, loss-scale inverse)
  std::int64_t step = 1;    // 1-based count of updates including this one
};

// Throws mlpo::Error when step < 1 or a beta is outside [0, 1), naming the field.
void validate(const AdamWParams& params);

// Single-threaded update of elements [0, n). p_out may be null (no bf16 copy written).
void adamw_update_bf16grad(const AdamWParams& params, float* p, float* m, float* v, const bf16* grad,
                           bf16* p_out, std::size_t n, SimdIsa isa = SimdIsa::best);
void adamw_update_fp32grad(const AdamWParams& params, float* p, float* m, float* v, const float* grad,
                           bf16* p_out, std::size_t n, SimdIsa isa = SimdIsa::best);

// The same update split over `pool` with static ranges aligned to adamw_grain elements;
// bitwise-identical to the single-threaded call for any pool size.
void adamw_update_bf16grad(ThreadPool& pool, const AdamWParams& params, float* p, float* m, float* v,
                           const bf16* grad, bf16* p_out, std::size_t n, SimdIsa isa = SimdIsa::best);
void adamw_update_fp32grad(ThreadPool& pool, const AdamWParams& params, float* p, float* m, float* v,
                           const float* grad, bf16* p_out, std::size_t n, SimdIsa isa = SimdIsa::best);

// Elements per parallel_for grain: a multiple of every vector width (16) and of a 64-byte cache
// line for fp32 and bf16 arrays, large enough that a chunk amortises the hand-off to a worker.
inline constexpr std::size_t adamw_grain = 16 * 1024;
static_assert(adamw_grain == kAdamWGrainElements, "core/adam_split.hpp models this split");

// Bytes one element's update must move between memory and the core: read p, m, v (12) and the
// gradient (2 or 4), write p, m, v (12) and the bf16 copy (2, when written).
constexpr std::size_t adamw_bytes_per_element(bool bf16_grad, bool writes_bf16_copy) {
  return 24 + (bf16_grad ? 2 : 4) + (writes_bf16_copy ? 2 : 0);
}

}  // namespace mlpo
