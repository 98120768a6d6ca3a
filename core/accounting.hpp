#pragma once
// Accounting: what a model costs on a cluster shape — parameters per component, bytes of
// every state kind per rank under ZeRO-3 partitioning, training FLOPs per token, and
// activation memory with per-layer checkpointing. Pure arithmetic on ModelSpec; the
// simulator, the tuner and `mlpo-tune --describe` all use these same numbers.

#include <cstdint>
#include <string>

#include "core/json_io.hpp"
#include "core/model_spec.hpp"

namespace mlpo {

struct ClusterShape {
  std::int64_t nodes = 1;
  std::int64_t ranks_per_node = 1;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 0;  // 0: the model's seq_len
  std::int64_t grad_accum = 1;

  std::int64_t ranks() const { return nodes * ranks_per_node; }
};

struct ParamCounts {
  std::int64_t embedding = 0;  // vocab x hidden
  std::int64_t lm_head = 0;    // vocab x hidden, 0 when tied
  std::int64_t attention = 0;  // q, k, v, o over all layers
  std::int64_t mlp = 0;        // gate, up, down over all layers
  std::int64_t norms = 0;      // 2 per layer + final
  std::int64_t per_layer = 0;  // one transformer block
  std::int64_t total = 0;
};

ParamCounts count_params(const ModelSpec& spec);

// Forward FLOPs of one token in one transformer layer (2 per weight, plus attention's scores
// and weighted sum, 4 x seq_len x hidden) and in the head (final norm + lm_head; the embedding
// lookup counts 0). Backward counts 3x forward (the recomputed forward included). The
// simulator charges these, and mlpo-profile's model probe turns the executor's measured times
// into effective FLOP/s against the same counts, so the two meet exactly.
double layer_forward_flops_per_token(const ModelSpec& spec, std::int64_t seq_len);
double head_forward_flops_per_token(const ModelSpec& spec);

// Bytes per parameter of each state kind.
inline constexpr std::int64_t kBf16Bytes = 2;
inline constexpr std::int64_t kOptimizerStateBytes = 12;  // fp32 master + Adam m + v
inline constexpr std::int64_t kFp32GradBytes = 4;         // baseline's flushed gradients

struct Accounting {
  ModelSpec spec;
  ClusterShape shape;
  ParamCounts params;
  std::int64_t params_per_rank = 0;     // ZeRO-3 shard: core/rank_shard's unrounded_share
  std::int64_t weights_bf16_bytes = 0;  // whole model
  std::int64_t grads_bf16_bytes = 0;    // whole model
  std::int64_t optimizer_bytes = 0;     // whole model, 12 B/param
  std::int64_t weights_bf16_bytes_per_rank = 0;
  std::int64_t grads_bf16_bytes_per_rank = 0;
  std::int64_t optimizer_bytes_per_rank = 0;
  std::int64_t fp32_grad_bytes_per_rank = 0;              // baseline mode only
  double model_flops_per_token = 0;                       // 6N (matmuls) + attention, fwd + bwd
  double hardware_flops_per_token = 0;                    // + recomputed forward (checkpointing)
  std::int64_t tokens_per_iteration = 0;                  // global: ranks x micro_batch x seq x grad_accum
  std::int64_t activation_checkpoint_bytes_per_rank = 0;  // layer inputs kept for backward
  std::int64_t activation_working_bytes_per_rank = 0;     // one layer recomputed + logits
};

// Throws mlpo::Error on a non-positive shape field, or a shape whose token or activation
// counts would overflow int64 (naming the flags).
Accounting account(const ModelSpec& spec, const ClusterShape& shape);

Json to_json(const Accounting& a);

}  // namespace mlpo

namespace mlpo {

// Human-readable summary of an Accounting (what `mlpo-tune --describe` prints).
std::string describe(const Accounting& a);

}  // namespace mlpo
