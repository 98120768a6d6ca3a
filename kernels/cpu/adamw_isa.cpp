#include "kernels/cpu/adamw_isa.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace mlpo {

namespace {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

}  // namespace

bool simd_isa_supported(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::best:
    case SimdIsa::scalar:
      return true;
    case SimdIsa::avx2:
      return cpu_has_avx2();
    case SimdIsa::avx512:
      return cpu_has_avx512();
  }
  return false;
}

SimdIsa best_simd_isa() {
  static const SimdIsa best = cpu_has_avx512() ? SimdIsa::avx512
                              : cpu_has_avx2() ? SimdIsa::avx2
                                               : SimdIsa::scalar;
  return best;
}

SimdIsa resolve_simd_isa(SimdIsa isa) {
  if (isa == SimdIsa::best) return best_simd_isa();
  if (!simd_isa_supported(isa))
    throw Error("SIMD variant '" + std::string(to_string(isa)) +
                "' requested but this CPU lacks it; use 'best', or one of the variants it has");
  return isa;
}

namespace {

// Every variant with its name: to_string and parse_simd_isa both read it.
constexpr std::array<std::pair<SimdIsa, std::string_view>, 4> kSimdIsaNames{{{SimdIsa::best, "best"},
                                                                             {SimdIsa::scalar, "scalar"},
                                                                             {SimdIsa::avx2, "avx2"},
                                                                             {SimdIsa::avx512, "avx512"}}};

}  // namespace

std::string_view to_string(SimdIsa isa) {
  for (const auto& [i, name] : kSimdIsaNames)
    if (i == isa) return name;
  return "?";
}

SimdIsa parse_simd_isa(std::string_view name) {
  for (const auto& [isa, n] : kSimdIsaNames)
    if (name == n) return isa;
  throw Error("unknown SIMD variant '" + std::string(name) + "'; expected best, scalar, avx2 or avx512");
}

}  // namespace mlpo
