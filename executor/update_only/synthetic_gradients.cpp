#include "executor/update_only/synthetic_gradients.hpp"

#include <bit>

namespace mlpo::update_only {

namespace {

// splitmix64 finaliser: a bijective mix with good avalanche, cheap enough per element.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline float gradient_from_hash(std::uint64_t h) {
  // 24 bits of mantissa in [0.5, 1), 4 bits of binade (2^0 .. 2^-12 ... -15), 1 sign bit.
  const float unit = 0.5f + static_cast<float>(h & 0xffffffu) * (0.5f / 16777216.0f);
  const std::uint32_t binade = static_cast<std::uint32_t>((h >> 24) & 0xfu);  // 0..15
  // unit * 2^-e built from the exponent bits (exact, like ldexp, but branch-free and
  // vectorisable: this loop runs over every element of every update-only step).
  const std::uint32_t e = (binade * 12u) / 15u;
  const float scale = std::bit_cast<float>((127u - e) << 23);
  const float magnitude = unit * scale;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) |
                              (static_cast<std::uint32_t>(h >> 63) << 31));
}

}  // namespace

float synthetic_gradient(std::uint64_t seed, std::int64_t step, std::int64_t global_index) {
  const std::uint64_t key = mix(seed ^ mix(static_cast<std::uint64_t>(step) * 0x632be59bd9b4e019ull));
  return bf16_to_float(
      float_to_bf16(gradient_from_hash(mix(key ^ static_cast<std::uint64_t>(global_index)))));
}

void synthetic_gradients(std::uint64_t seed, std::int64_t step, std::int64_t global_begin,
                         std::span<bf16> out, ThreadPool& pool) {
  const std::uint64_t key = mix(seed ^ mix(static_cast<std::uint64_t>(step) * 0x632be59bd9b4e019ull));
  pool.parallel_for(out.size(), 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j) {
      const std::uint64_t index = static_cast<std::uint64_t>(global_begin) + j;
      out[j] = float_to_bf16(gradient_from_hash(mix(key ^ index)));
    }
  });
}

float synthetic_initial_weight(std::uint64_t seed, std::int64_t global_index) {
  const std::uint64_t h = mix(mix(seed ^ 0x5851f42d4c957f2dull) ^ static_cast<std::uint64_t>(global_index));
  return (static_cast<float>(h >> 40) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
}

}  // namespace mlpo::update_only
