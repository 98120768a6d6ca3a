#pragma once
// Synthetic bf16 gradients for the update-only mode: element i of step s is a pure function
// of (seed, s, global index i), so every rank, every plan and every run sees the same
// gradient without a model. Values are uniform in sign with magnitudes spread over several
// binades (2^-12 .. 2^0), like real gradients, so AdamW's arithmetic is exercised across
// scales. Cost: one 64-bit hash per element (about 1 ns), parallel over the pool.

#include <cstdint>
#include <span>

#include "core/bf16.hpp"
#include "core/thread_pool.hpp"

namespace mlpo::update_only {

// Fills out[j] with the gradient of global element (global_begin + j).
void synthetic_gradients(std::uint64_t seed, std::int64_t step, std::int64_t global_begin,
                         std::span<bf16> out, ThreadPool& pool);

// One element, for tests and references.
float synthetic_gradient(std::uint64_t seed, std::int64_t step, std::int64_t global_index);

// Deterministic initial master weight of a global element (for update-only runs):
// uniform in [-0.05, 0.05).
float synthetic_initial_weight(std::uint64_t seed, std::int64_t global_index);

}  // namespace mlpo::update_only
