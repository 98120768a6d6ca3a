#pragma once
// What the tests of the SIMD variants of the CPU kernels (AdamW, bf16<->fp32 conversion) share:
// the parameter printed by name, a fixture that skips the variants this CPU cannot run, and the
// variants they are instantiated over.

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "kernels/cpu/adamw_isa.hpp"

namespace mlpo {

// Test names and failure messages say "avx512", not "4-byte object <03-00 00-00>".
inline void PrintTo(SimdIsa isa, std::ostream* os) { *os << to_string(isa); }

namespace testing {

// A test parameterised over SimdIsa: a variant this CPU lacks is skipped, saying which.
class SimdVariantTest : public ::testing::TestWithParam<SimdIsa> {
 protected:
  void SetUp() override {
    if (!simd_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << to_string(GetParam()) << "; its variant cannot run here";
  }
};

// Every concrete variant, and the test-name suffix of each (its name).
inline auto simd_variants() { return ::testing::Values(SimdIsa::scalar, SimdIsa::avx2, SimdIsa::avx512); }
inline std::string simd_variant_name(const ::testing::TestParamInfo<SimdIsa>& info) {
  return std::string(to_string(info.param));
}

}  // namespace testing
}  // namespace mlpo
