#include "executor/offload/checked_adamw.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/cpu/adamw_crc.hpp"

namespace mlpo::offload {
namespace {

// The chunk's weight-decay setting when the mask has one piece over it; none when it has two
// or more (those chunks take the separate passes, adamw_masked_range cutting them).
std::optional<AdamWParams> one_piece(const AdamWParams& adam, const WeightDecayMask& mask, std::int64_t at,
                                     std::size_t len) {
  int pieces = 0;
  bool decays = true;
  mask.for_each_piece(at, static_cast<std::int64_t>(len), [&](std::int64_t, std::int64_t, bool d) {
    ++pieces;
    decays = d;
  });
  if (pieces != 1) return std::nullopt;
  AdamWParams a = adam;
  if (!decays) a.weight_decay = 0.0f;
  return a;
}

// One chunk in AdamW's fused pass (kernels/cpu/adamw_crc.hpp). In a buffer the update runs in
// place: a mismatch leaves the buffer changed, but it is never written back. In a mapped file
// the new values go to this thread's scratch chunk and are copied in only after the check.
void fused_chunk(InPlaceIntegrity& integrity, std::int64_t subgroup, std::int64_t c, const AdamWParams& a,
                 float* p, float* m, float* v, const float* g32, const bf16* g16, bf16* out, std::size_t len,
                 bool mapped, const std::string& where) {
  if (!mapped) {
    const AdamWChunkCrcs crcs = adamw_crc_update(a, {p, m, v, p, m, v}, g32, g16, out, len);
    integrity.verify_crcs(subgroup, c, crcs.before, len, where);
    integrity.record_crcs(subgroup, c, crcs.after);
    return;
  }
  // (The bf16 weights go straight to `out`: they are not the file's.)
  constexpr auto chunk = static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  thread_local std::vector<float> scratch;
  scratch.resize(3 * chunk);
  float* sp = scratch.data();
  const AdamWChunkCrcs crcs =
      adamw_crc_update(a, {p, m, v, sp, sp + chunk, sp + 2 * chunk}, g32, g16, out, len);
  integrity.verify_crcs(subgroup, c, crcs.before, len, where);
  std::memcpy(p, sp, len * sizeof(float));
  std::memcpy(m, sp + chunk, len * sizeof(float));
  std::memcpy(v, sp + 2 * chunk, len * sizeof(float));
  integrity.record_crcs(subgroup, c, crcs.after);
}

}  // namespace

void checked_adamw(ThreadPool& pool, InPlaceIntegrity& integrity, std::int64_t subgroup,
                   const WeightDecayMask& mask, std::int64_t begin, const AdamWParams& adam, float* p,
                   float* m, float* v, const float* g32, const bf16* g16, bf16* out, std::size_t n,
                   bool mapped, const std::string& where) {
  constexpr auto chunk = static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  const bool fused = adamw_crc_available();
  pool.parallel_for(n, chunk, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; i += chunk) {
      const std::size_t len = std::min(chunk, e - i);
      const auto c = static_cast<std::int64_t>(i / chunk);
      if (fused) {
        if (const auto a = one_piece(adam, mask, begin + static_cast<std::int64_t>(i), len)) {
          fused_chunk(integrity, subgroup, c, *a, p + i, m + i, v + i, g32 ? g32 + i : nullptr,
                      g16 ? g16 + i : nullptr, out ? out + i : nullptr, len, mapped, where);
          continue;
        }
      }
      integrity.verify(subgroup, c, p + i, m + i, v + i, len, where);
      // The weight-decay mask's pieces, as adamw_masked() cuts them (element-wise: no bit changes).
      adamw_masked_range(adam, mask, begin, i, len, p, m, v, g16, g32, out);
      integrity.record(subgroup, c, p + i, m + i, v + i, len);
    }
  });
  integrity.mark_recorded(subgroup);
}

}  // namespace mlpo::offload
