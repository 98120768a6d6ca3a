#pragma once
// SimdIsa: which instruction-set variant of the optimizer-side CPU kernels (AdamW, bf16<->fp32
// conversion) runs. Binaries are built for baseline x86-64; the AVX2 and AVX-512 variants live in
// their own translation units compiled with their own -m flags and are chosen at run time from
// what the CPU reports (__builtin_cpu_supports), so one binary runs on any x86-64 machine.
//
// (Named adamw_* to stay clear of the concurrent transformer-ops work in kernels/cpu; if those
// kernels want the same dispatch, this header is the one to rename to cpu_isa.hpp.)

#include <string_view>

namespace mlpo {

enum class SimdIsa {
  best,    // the widest variant this CPU supports (resolved once, then cached)
  scalar,  // plain C++, any x86-64
  avx2,    // 8 lanes; needs AVX2
  avx512,  // 16 lanes with masked tails; needs AVX-512 F, BW and VL
};

// True when this CPU can run `isa` (always true for best and scalar).
bool simd_isa_supported(SimdIsa isa);

// The concrete variant `best` stands for on this CPU. Cheap after the first call.
SimdIsa best_simd_isa();

// Resolves `best`; throws mlpo::Error naming the ISA when the CPU lacks the one requested, so a
// request for AVX-512 never silently runs something else.
SimdIsa resolve_simd_isa(SimdIsa isa);

// "scalar", "avx2", "avx512", "best".
std::string_view to_string(SimdIsa isa);

// Parses the names to_string prints; throws mlpo::Error on anything else.
SimdIsa parse_simd_isa(std::string_view name);

}  // namespace mlpo
