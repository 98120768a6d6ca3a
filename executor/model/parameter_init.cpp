#include "executor/model/parameter_init.hpp"

#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace mlpo::model {

namespace {
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

double hashed_normal(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t h = splitmix64(splitmix64(seed) + index);
  const double u1 = static_cast<double>((h >> 40) + 1) / 16777216.0;
  const double u2 = static_cast<double>(h & 0xffffffu) / 16777216.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void initial_values(const ParameterLayout& layout, std::uint64_t seed, std::int64_t first,
                    std::span<float> out) {
  const std::int64_t count = static_cast<std::int64_t>(out.size());
  MLPO_CHECK(first >= 0 && first + count <= layout.total(), "initial_values: range outside the parameters");
  std::int64_t i = first;
  while (i < first + count) {
    const ParameterEntry& e = layout.entry_at(i);
    const std::int64_t end = std::min(first + count, e.offset + e.numel());
    for (; i < end; ++i)
      out[static_cast<std::size_t>(i - first)] =
          e.is_norm ? 1.0f
                    : static_cast<float>(kInitStd * hashed_normal(seed, static_cast<std::uint64_t>(i)));
  }
}

void initial_values(const ParameterLayout& layout, std::uint64_t seed, std::int64_t first,
                    std::span<float> out, ThreadPool& threads) {
  threads.parallel_for(out.size(), 4096, [&](std::size_t begin, std::size_t end) {
    initial_values(layout, seed, first + static_cast<std::int64_t>(begin), out.subspan(begin, end - begin));
  });
}

}  // namespace mlpo::model
