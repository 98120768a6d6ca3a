#include "executor/comm/rank_order_sum.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "core/error.hpp"

namespace mlpo::comm {

namespace {

constexpr std::size_t kTile = 1024;  // elements per tile: 4 KiB of fp32

// Sums parts[lo, hi) over one tile [begin, begin + n) into `acc` (kTile accumulators), using
// scratch tiles below `scratch` for the right subtrees (one per tree level).
template <class In, class Acc, class Widen>
void tile_sum(std::span<const In* const> parts, std::size_t lo, std::size_t hi, std::size_t begin,
              std::size_t n, Acc* acc, Acc* scratch, Widen widen) {
  if (hi - lo == 1) {
    const In* src = parts[lo] + begin;
    for (std::size_t i = 0; i < n; ++i) acc[i] = widen(src[i]);
    return;
  }
  const std::size_t mid = lo + (hi - lo + 1) / 2;
  tile_sum(parts, lo, mid, begin, n, acc, scratch, widen);
  tile_sum(parts, mid, hi, begin, n, scratch, scratch + kTile, widen);
  for (std::size_t i = 0; i < n; ++i) acc[i] = acc[i] + scratch[i];
}

std::size_t tree_levels(std::size_t parts) {
  std::size_t levels = 1;
  while ((std::size_t{1} << (levels - 1)) < parts) ++levels;
  return levels;
}

template <class In, class Acc, class Widen, class Narrow>
void tree_sum_tiled(std::span<const In* const> parts, std::span<In> out, Widen widen, Narrow narrow) {
  MLPO_CHECK(!parts.empty(), "tree_sum needs at least one contribution");
  std::vector<Acc> tiles(kTile * (tree_levels(parts.size()) + 1));
  Acc* acc = tiles.data();
  for (std::size_t begin = 0; begin < out.size(); begin += kTile) {
    const std::size_t n = std::min(kTile, out.size() - begin);
    tile_sum(parts, 0, parts.size(), begin, n, acc, acc + kTile, widen);
    for (std::size_t i = 0; i < n; ++i) out[begin + i] = narrow(acc[i]);
  }
}

template <class T>
void tree_sum_same(std::span<const T* const> parts, std::span<T> out) {
  tree_sum_tiled<T, T>(
      parts, out, [](T x) { return x; }, [](T x) { return x; });
}

}  // namespace

void tree_sum(std::span<const float* const> parts, std::span<float> out) { tree_sum_same(parts, out); }
void tree_sum(std::span<const double* const> parts, std::span<double> out) { tree_sum_same(parts, out); }
void tree_sum(std::span<const std::int64_t* const> parts, std::span<std::int64_t> out) {
  tree_sum_same(parts, out);
}

void tree_sum(std::span<const bf16* const> parts, std::span<bf16> out) {
  tree_sum_tiled<bf16, float>(
      parts, out, [](bf16 x) { return bf16_to_float(x); }, [](float x) { return float_to_bf16(x); });
}

}  // namespace mlpo::comm
