#pragma once
// Tiny model configuration and batches for the model tests.

#include <cstdint>
#include <random>
#include <vector>

#include "executor/model/parameter_init.hpp"
#include "executor/model/transformer_model.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace mlpo::testing {

inline model::ModelShape tiny_shape(bool tied = false) {
  model::ModelShape s{64, 32, 2, 4, 2, 64, 16};  // vocab, hidden, layers, heads, kv heads, ffn, seq
  s.tied_embeddings = tied;
  return s;
}

struct Batch {
  std::vector<std::int32_t> tokens, targets;
};

// Random sequences; targets are the next token of the same stream.
inline Batch random_batch(const model::ModelShape& s, int batch, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b;
  for (int i = 0; i < batch; ++i) {
    std::vector<std::int32_t> stream(static_cast<std::size_t>(s.seq_len) + 1);
    for (auto& t : stream) t = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(s.vocab));
    b.tokens.insert(b.tokens.end(), stream.begin(), stream.end() - 1);
    b.targets.insert(b.targets.end(), stream.begin() + 1, stream.end());
  }
  return b;
}

// Initial values with non-matrix weights spread out: matrices N(0, (0.02*scale)^2), norm
// gains 1 + N(0, 0.1^2). Larger weights make attention and SwiGLU visibly non-linear, which a
// gradient check needs to mean anything.
inline std::vector<float> spread_weights(const model::ParameterLayout& layout, std::uint64_t seed,
                                         float scale) {
  std::vector<float> w(static_cast<std::size_t>(layout.total()));
  model::initial_values(layout, seed, 0, w);
  for (const auto& e : layout.entries())
    for (std::int64_t i = e.offset; i < e.offset + e.numel(); ++i)
      w[static_cast<std::size_t>(i)] = e.is_norm ? 1.0f + 0.1f * static_cast<float>(model::hashed_normal(
                                                                     seed + 1, static_cast<std::uint64_t>(i)))
                                                 : w[static_cast<std::size_t>(i)] * scale;
  return w;
}

// The gradient buffer (f32 or f64, host-addressable on the CPU backend) as doubles.
inline std::vector<double> gradients_of(const model::TransformerModel& m) {
  const Tensor g = m.gradients();
  std::vector<double> out(static_cast<std::size_t>(g.numel()));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = g.dtype == DType::f64 ? g.as<double>()[i] : static_cast<double>(g.as<float>()[i]);
  return out;
}

// One forward and backward(loss_scale) on `b`, added to the gradient buffer: the buffer after.
inline std::vector<double> add_gradients(model::TransformerModel& m, const Batch& b, float loss_scale) {
  m.forward(b.tokens, b.targets);
  m.backward(loss_scale);
  return gradients_of(m);
}

}  // namespace mlpo::testing
