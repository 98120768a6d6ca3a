// AdamW: constants, the scalar variant (the reference the vector variants must equal bit for
// bit), dispatch and threading. Compiled for baseline x86-64 with -ffp-contract=off.

#include "kernels/cpu/adamw.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/isa_dispatch.hpp"

namespace mlpo {

namespace {

using detail::AdamWConstants;

inline float load_grad(const float* g, std::size_t i) { return g[i]; }
inline float load_grad(const bf16* g, std::size_t i) { return bf16_to_float(g[i]); }

// The per-element operation sequence of adamw_variants.hpp, one element at a time.
template <class Grad>
void adamw_scalar(const AdamWConstants& c, float* p, float* m, float* v, const Grad* grad, bf16* p_out,
                  std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = load_grad(grad, i) * c.grad_scale;
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * g;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * (g * g);
    const float mhat = mi / c.bias_correction1;
    const float vhat = vi / c.bias_correction2;
    const float step = c.lr * (mhat / (std::sqrt(vhat) + c.eps));
    const float pi = p[i] - (c.lr_times_wd * p[i] + step);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
    if (p_out) p_out[i] = float_to_bf16(pi);
  }
}

template <class Grad>
using AdamWKernel = void (*)(const AdamWConstants&, float*, float*, float*, const Grad*, bf16*, std::size_t);

AdamWKernel<bf16> kernel_for(SimdIsa isa, const bf16*) {
  return detail::pick_variant<AdamWKernel<bf16>>(isa, detail::adamw_bf16grad_avx512,
                                                 detail::adamw_bf16grad_avx2, adamw_scalar<bf16>);
}

AdamWKernel<float> kernel_for(SimdIsa isa, const float*) {
  return detail::pick_variant<AdamWKernel<float>>(isa, detail::adamw_fp32grad_avx512,
                                                  detail::adamw_fp32grad_avx2, adamw_scalar<float>);
}

template <class Grad>
void run(const AdamWConstants& c, float* p, float* m, float* v, const Grad* g, bf16* p_out, std::size_t n,
         SimdIsa isa) {
  kernel_for(isa, g)(c, p, m, v, g, p_out, n);
}

template <class Grad>
void run_parallel(ThreadPool& pool, const AdamWParams& params, float* p, float* m, float* v, const Grad* g,
                  bf16* p_out, std::size_t n, SimdIsa isa) {
  const AdamWConstants c = detail::make_adamw_constants(params);
  isa = resolve_simd_isa(isa);
  pool.parallel_for(n, adamw_grain, [&](std::size_t b, std::size_t e) {
    run(c, p + b, m + b, v + b, g + b, p_out ? p_out + b : nullptr, e - b, isa);
  });
}

}  // namespace

detail::AdamWConstants detail::make_adamw_constants(const AdamWParams& a) {
  validate(a);
  const auto t = static_cast<double>(a.step);
  AdamWConstants c;
  c.beta1 = a.beta1;
  c.one_minus_beta1 = 1.0f - a.beta1;  // exact for beta in [0.5, 1) (Sterbenz)
  c.beta2 = a.beta2;
  c.one_minus_beta2 = 1.0f - a.beta2;
  c.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta1), t));
  c.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta2), t));
  c.lr = a.lr;
  c.lr_times_wd = static_cast<float>(static_cast<double>(a.lr) * a.weight_decay);
  c.eps = a.eps;
  c.grad_scale = a.grad_scale;
  return c;
}

void validate(const AdamWParams& a) {
  if (a.step < 1) throw Error("AdamW step is " + std::to_string(a.step) + "; it counts updates from 1");
  if (!(a.beta1 >= 0.0f && a.beta1 < 1.0f))
    throw Error("AdamW beta1 is " + std::to_string(a.beta1) + "; it must lie in [0, 1)");
  if (!(a.beta2 >= 0.0f && a.beta2 < 1.0f))
    throw Error("AdamW beta2 is " + std::to_string(a.beta2) + "; it must lie in [0, 1)");
}

void adamw_update_bf16grad(const AdamWParams& params, float* p, float* m, float* v, const bf16* grad,
                           bf16* p_out, std::size_t n, SimdIsa isa) {
  run(detail::make_adamw_constants(params), p, m, v, grad, p_out, n, resolve_simd_isa(isa));
}

void adamw_update_fp32grad(const AdamWParams& params, float* p, float* m, float* v, const float* grad,
                           bf16* p_out, std::size_t n, SimdIsa isa) {
  run(detail::make_adamw_constants(params), p, m, v, grad, p_out, n, resolve_simd_isa(isa));
}

void adamw_update_bf16grad(ThreadPool& pool, const AdamWParams& params, float* p, float* m, float* v,
                           const bf16* grad, bf16* p_out, std::size_t n, SimdIsa isa) {
  run_parallel(pool, params, p, m, v, grad, p_out, n, isa);
}

void adamw_update_fp32grad(ThreadPool& pool, const AdamWParams& params, float* p, float* m, float* v,
                           const float* grad, bf16* p_out, std::size_t n, SimdIsa isa) {
  run_parallel(pool, params, p, m, v, grad, p_out, n, isa);
}

}  // namespace mlpo
