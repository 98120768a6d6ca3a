#pragma once
// What the two model benches (CPU and CUDA backend) share: a stopwatch and the random batch
// they time forward+backward on.

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

namespace mlpo::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct TokenBatch {
  std::vector<std::int32_t> tokens, targets;
};

// `n` tokens, then `n` targets, uniform over the vocabulary, from one generator seeded 5.
inline TokenBatch random_tokens(std::int64_t n, std::int64_t vocab) {
  std::mt19937_64 rng(5);
  TokenBatch b;
  b.tokens.resize(static_cast<std::size_t>(n));
  b.targets.resize(b.tokens.size());
  for (auto& t : b.tokens) t = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab));
  for (auto& t : b.targets) t = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab));
  return b;
}

}  // namespace mlpo::bench
