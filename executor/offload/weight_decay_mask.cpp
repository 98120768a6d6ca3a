#include "executor/offload/weight_decay_mask.hpp"

#include <algorithm>

#include "core/thread_pool.hpp"

namespace mlpo::offload {

WeightDecayMask::WeightDecayMask(std::vector<ElementRange> exempt, const RankShard& shard) {
  std::vector<ElementRange> local;
  for (const ElementRange& r : exempt) {
    const std::int64_t b = std::max(r.begin, shard.global_begin), e = std::min(r.end, shard.global_end());
    if (b < e) local.push_back({b - shard.global_begin, e - shard.global_begin});
  }
  std::sort(local.begin(), local.end(),
            [](const ElementRange& a, const ElementRange& b) { return a.begin < b.begin; });
  for (const ElementRange& r : local) {
    if (!exempt_.empty() && r.begin <= exempt_.back().end)
      exempt_.back().end = std::max(exempt_.back().end, r.end);
    else
      exempt_.push_back(r);
  }
}

std::int64_t WeightDecayMask::exempt_elements() const {
  std::int64_t n = 0;
  for (const ElementRange& r : exempt_) n += r.end - r.begin;
  return n;
}

void WeightDecayMask::for_each_piece(
    std::int64_t begin, std::int64_t count,
    const std::function<void(std::int64_t, std::int64_t, bool)>& piece) const {
  const std::int64_t end = begin + count;
  // The first exempt range that ends after `begin`.
  auto it = std::upper_bound(exempt_.begin(), exempt_.end(), begin,
                             [](std::int64_t x, const ElementRange& r) { return x < r.end; });
  std::int64_t at = begin;
  for (; at < end && it != exempt_.end() && it->begin < end; ++it) {
    const std::int64_t from = std::max(at, it->begin), stop = std::min(end, it->end);
    if (from > at) piece(at - begin, from - at, true);
    piece(from - begin, stop - from, false);
    at = stop;
  }
  if (at < end) piece(at - begin, end - at, true);
}

void adamw_masked(ThreadPool& pool, const AdamWParams& adam, const WeightDecayMask& mask, std::int64_t begin,
                  std::size_t n, float* p, float* m, float* v, const bf16* grad16, const float* grad32,
                  bf16* p_out) {
  // One parallel_for over the subgroup (static ranges of adamw_grain, as core/adam_split.hpp
  // models it), each range cut at the mask's pieces: one wake-up of the pool per subgroup, not
  // one per piece (a subgroup across many norm gains has dozens).
  pool.parallel_for(n, adamw_grain, [&](std::size_t b, std::size_t e) {
    adamw_masked_range(adam, mask, begin, b, e - b, p, m, v, grad16, grad32, p_out);
  });
}

void adamw_masked_range(const AdamWParams& adam, const WeightDecayMask& mask, std::int64_t begin,
                        std::size_t at, std::size_t n, float* p, float* m, float* v, const bf16* grad16,
                        const float* grad32, bf16* p_out) {
  mask.for_each_piece(begin + static_cast<std::int64_t>(at), static_cast<std::int64_t>(n),
                      [&](std::int64_t offset, std::int64_t count, bool decays) {
                        AdamWParams a = adam;
                        if (!decays) a.weight_decay = 0.0f;
                        const std::size_t i = at + static_cast<std::size_t>(offset);
                        const auto len = static_cast<std::size_t>(count);
                        bf16* out = p_out ? p_out + i : nullptr;
                        if (grad32)
                          adamw_update_fp32grad(a, p + i, m + i, v + i, grad32 + i, out, len);
                        else
                          adamw_update_bf16grad(a, p + i, m + i, v + i, grad16 + i, out, len);
                      });
}

}  // namespace mlpo::offload
