#pragma once
// Internal to kernels/cpu: the one switch from a resolved SimdIsa to the variant of a kernel that
// runs, shared by AdamW (adamw.cpp) and the bf16<->fp32 conversions (convert.cpp). Included by
// baseline translation units only (see adamw_variants.hpp on the ISA ones).

#include "kernels/cpu/adamw_isa.hpp"

namespace mlpo::detail {

// The avx512 or avx2 variant for those ISAs; the scalar one for any other (a resolved `isa` is
// never `best`).
template <class Fn>
Fn pick_variant(SimdIsa isa, Fn avx512, Fn avx2, Fn scalar) {
  switch (isa) {
    case SimdIsa::avx512:
      return avx512;
    case SimdIsa::avx2:
      return avx2;
    default:
      return scalar;
  }
}

}  // namespace mlpo::detail
