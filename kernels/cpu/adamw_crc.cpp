// adamw_crc: the dispatch to the fused AVX2 pass and its folding constants. Compiled for
// baseline x86-64.
#include "kernels/cpu/adamw_crc.hpp"

#include "core/crc32c_polynomial.hpp"
#include "core/error.hpp"
#include "kernels/cpu/internal/adamw_variants.hpp"

namespace mlpo {
namespace {

detail::CrcFoldConstants make_fold_constants() {
  const Crc32cFoldPair by32 = crc32c_fold_pair(32), by16 = crc32c_fold_pair(16);
  return {{by32.low, by32.high}, {by16.low, by16.high}};
}

}  // namespace

bool adamw_crc_available() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
                                __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
  return available;
#else
  return false;
#endif
}

AdamWChunkCrcs adamw_crc_update(const AdamWParams& params, const AdamWChunk& chunk, const float* g32,
                                const bf16* g16, bf16* p_out, std::size_t n) {
  MLPO_CHECK(adamw_crc_available(), "adamw_crc_update needs AVX2 and VPCLMULQDQ");
  static const detail::CrcFoldConstants fold = make_fold_constants();
  const detail::AdamWConstants c = detail::make_adamw_constants(params);
  std::uint32_t crcs[6];
  if (g32)
    detail::adamw_crc_fp32grad_avx2(c, fold, chunk.p_in, chunk.m_in, chunk.v_in, chunk.p, chunk.m, chunk.v,
                                    g32, p_out, n, crcs);
  else
    detail::adamw_crc_bf16grad_avx2(c, fold, chunk.p_in, chunk.m_in, chunk.v_in, chunk.p, chunk.m, chunk.v,
                                    g16, p_out, n, crcs);
  return {{crcs[0], crcs[1], crcs[2]}, {crcs[3], crcs[4], crcs[5]}};
}

}  // namespace mlpo
