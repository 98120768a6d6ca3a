#include "core/attention_blocking.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo {

AttentionBlocking attention_blocking(const AttentionDims& d, std::int64_t max_score_elements) {
  MLPO_CHECK(d.Hkv > 0 && d.Hq % d.Hkv == 0,
             "attention_blocking: query heads must be a multiple of kv heads");
  AttentionBlocking b;
  b.group = d.Hq / d.Hkv;
  b.rows = std::max<std::int64_t>(1, std::min(d.T, kMaxBlockRows));
  const std::int64_t ld = AttentionBlocking::score_ld(d.T);
  while (b.rows > 16 && b.rows * b.group * ld > max_score_elements) b.rows = (b.rows + 1) / 2;
  const std::int64_t per_pair = std::max<std::int64_t>(1, b.rows * b.group * ld);
  b.pairs =
      std::clamp<std::int64_t>(max_score_elements / per_pair, 1, std::max<std::int64_t>(1, d.B * d.Hkv));
  return b;
}

std::size_t attention_workspace_bytes(const AttentionDims& d, std::size_t element_bytes,
                                      std::int64_t max_score_elements) {
  if (d.B * d.T * d.Hq * d.D == 0) return 0;
  const auto part = [](std::int64_t elements, std::size_t bytes) {
    const std::size_t n = static_cast<std::size_t>(elements) * bytes;
    return (n + 255) / 256 * 256;
  };
  const AttentionBlocking b = attention_blocking(d, max_score_elements);
  const std::int64_t q_elements = d.B * d.T * d.Hq * d.D, kv_elements = d.B * d.T * d.Hkv * d.D;
  const std::int64_t scores = b.score_elements(d.T);
  return 3 * part(q_elements, element_bytes)     // q, dout, out (or dq), head-major
         + 2 * part(kv_elements, element_bytes)  // k, v, head-major
         + 2 * part(kv_elements, 4)              // dk, dv accumulators (fp32)
         + 2 * part(scores, 4)                   // scores, score gradients (fp32)
         + 2 * part(scores, element_bytes);      // probabilities, score gradients (operand type)
}

}  // namespace mlpo
