#include "executor/offload/gradient_norm.hpp"

#include <algorithm>
#include <cmath>

#include "core/rank_shard.hpp"

namespace mlpo::offload {

std::vector<double> chunk_square_sums(std::span<const bf16> grads, ThreadPool& pool) {
  const std::size_t chunks = (grads.size() + kNormChunk - 1) / kNormChunk;
  std::vector<double> sums(chunks, 0.0);
  pool.parallel_for(chunks, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t c = b; c < e; ++c) {
      const std::size_t begin = c * kNormChunk;
      const std::size_t end = std::min(grads.size(), begin + kNormChunk);
      double s = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const double g = bf16_to_float(grads[i]);
        s += g * g;
      }
      sums[c] = s;
    }
  });
  return sums;
}

double global_norm(std::span<const double> all_chunk_sums) {
  double total = 0;
  for (double s : all_chunk_sums) total += s;
  return std::sqrt(total);
}

float clip_scale(double norm, double max_norm) {
  if (max_norm <= 0 || norm <= max_norm) return 1.0f;
  return static_cast<float>(max_norm / (norm + 1e-6));
}

}  // namespace mlpo::offload
