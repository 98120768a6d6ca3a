#pragma once
// Bulk bf16 <-> fp32 conversion, vectorised with the same run-time ISA dispatch as AdamW.
// bf16 -> fp32 is exact; fp32 -> bf16 rounds to nearest even and keeps NaN a (quiet) NaN, bit for
// bit what mlpo::float_to_bf16 does, in every variant and for any thread count. Buffers are owned
// by the caller and must not overlap. Cost: memory-bound, 6 bytes moved per element.

#include <cstddef>

#include "core/bf16.hpp"
#include "kernels/cpu/adamw_isa.hpp"

namespace mlpo {

class ThreadPool;

void bf16_to_fp32(const bf16* src, float* dst, std::size_t n, SimdIsa isa = SimdIsa::best);
void fp32_to_bf16(const float* src, bf16* dst, std::size_t n, SimdIsa isa = SimdIsa::best);

// Split over `pool` in static ranges; identical output for any pool size.
void bf16_to_fp32(ThreadPool& pool, const bf16* src, float* dst, std::size_t n, SimdIsa isa = SimdIsa::best);
void fp32_to_bf16(ThreadPool& pool, const float* src, bf16* dst, std::size_t n, SimdIsa isa = SimdIsa::best);

}  // namespace mlpo
