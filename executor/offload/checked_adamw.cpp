#include "executor/offload/checked_adamw.hpp"

#include <algorithm>

namespace mlpo::offload {

void checked_adamw(ThreadPool& pool, InPlaceIntegrity& integrity, std::int64_t subgroup,
                   const WeightDecayMask& mask, std::int64_t begin, const AdamWParams& adam, float* p,
                   float* m, float* v, const float* g32, const bf16* g16, bf16* out, std::size_t n,
                   const std::string& where) {
  constexpr auto chunk = static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  pool.parallel_for(n, chunk, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; i += chunk) {
      const std::size_t len = std::min(chunk, e - i);
      const auto c = static_cast<std::int64_t>(i / chunk);
      integrity.verify(subgroup, c, p + i, m + i, v + i, len, where);
      // The weight-decay mask's pieces, as adamw_masked() cuts them (element-wise: no bit changes).
      adamw_masked_range(adam, mask, begin, i, len, p, m, v, g16, g32, out);
      integrity.record(subgroup, c, p + i, m + i, v + i, len);
    }
  });
  integrity.mark_recorded(subgroup);
}

}  // namespace mlpo::offload
