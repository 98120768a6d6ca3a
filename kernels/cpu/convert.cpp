// bf16 <-> fp32: scalar variant (mlpo::bf16_to_float / float_to_bf16), dispatch and threading.

#include "kernels/cpu/convert.hpp"

#include "core/thread_pool.hpp"
#include "kernels/cpu/internal/adamw_variants.hpp"
#include "kernels/cpu/internal/isa_dispatch.hpp"

namespace mlpo {

namespace {

// Elements per parallel_for grain: a multiple of 16 lanes and of a cache line in both arrays.
constexpr std::size_t convert_grain = 32 * 1024;

void bf16_to_fp32_scalar(const bf16* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
}

void fp32_to_bf16_scalar(const float* src, bf16* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

void to_fp32(const bf16* src, float* dst, std::size_t n, SimdIsa isa) {
  detail::pick_variant(isa, detail::bf16_to_fp32_avx512, detail::bf16_to_fp32_avx2, bf16_to_fp32_scalar)(
      src, dst, n);
}

void to_bf16(const float* src, bf16* dst, std::size_t n, SimdIsa isa) {
  detail::pick_variant(isa, detail::fp32_to_bf16_avx512, detail::fp32_to_bf16_avx2, fp32_to_bf16_scalar)(
      src, dst, n);
}

}  // namespace

void bf16_to_fp32(const bf16* src, float* dst, std::size_t n, SimdIsa isa) {
  to_fp32(src, dst, n, resolve_simd_isa(isa));
}

void fp32_to_bf16(const float* src, bf16* dst, std::size_t n, SimdIsa isa) {
  to_bf16(src, dst, n, resolve_simd_isa(isa));
}

void bf16_to_fp32(ThreadPool& pool, const bf16* src, float* dst, std::size_t n, SimdIsa isa) {
  isa = resolve_simd_isa(isa);
  pool.parallel_for(n, convert_grain,
                    [&](std::size_t b, std::size_t e) { to_fp32(src + b, dst + b, e - b, isa); });
}

void fp32_to_bf16(ThreadPool& pool, const float* src, bf16* dst, std::size_t n, SimdIsa isa) {
  isa = resolve_simd_isa(isa);
  pool.parallel_for(n, convert_grain,
                    [&](std::size_t b, std::size_t e) { to_bf16(src + b, dst + b, e - b, isa); });
}

}  // namespace mlpo
