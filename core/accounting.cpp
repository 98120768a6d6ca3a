#include "core/accounting.hpp"

#include "core/error.hpp"

namespace mlpo {

ParamCounts count_params(const ModelSpec& s) {
  ParamCounts c;
  c.embedding = s.vocab * s.hidden;
  c.lm_head = s.tied_embeddings ? 0 : s.vocab * s.hidden;
  const std::int64_t attn = 2 * s.hidden * s.hidden + 2 * s.hidden * s.kv_dim();
  const std::int64_t mlp = 3 * s.hidden * s.ffn_hidden;
  const std::int64_t norms = 2 * s.hidden;
  c.per_layer = attn + mlp + norms;
  c.attention = attn * s.layers;
  c.mlp = mlp * s.layers;
  c.norms = norms * s.layers + s.hidden;
  c.total = c.embedding + c.lm_head + c.attention + c.mlp + c.norms;
  return c;
}

Accounting account(const ModelSpec& spec, const ClusterShape& shape_in) {
  ClusterShape shape = shape_in;
  if (shape.seq_len == 0) shape.seq_len = spec.seq_len;
  const std::pair<const char*, std::int64_t> fields[] = {{"--nodes", shape.nodes},
                                                         {"--gpus-per-node", shape.gpus_per_node},
                                                         {"--micro-batch", shape.micro_batch},
                                                         {"--seq-len", shape.seq_len},
                                                         {"--grad-accum", shape.grad_accum}};
  for (const auto& [name, v] : fields)
    if (v <= 0) throw Error(std::string(name) + ": must be > 0, got " + std::to_string(v));

  Accounting a;
  a.spec = spec;
  a.shape = shape;
  a.params = count_params(spec);
  const std::int64_t n = a.params.total;
  const std::int64_t ranks = shape.ranks();
  a.params_per_rank = (n + ranks - 1) / ranks;
  a.weights_bf16_bytes = n * kBf16Bytes;
  a.grads_bf16_bytes = n * kBf16Bytes;
  a.optimizer_bytes = n * kOptimizerStateBytes;
  a.weights_bf16_bytes_per_rank = a.params_per_rank * kBf16Bytes;
  a.grads_bf16_bytes_per_rank = a.params_per_rank * kBf16Bytes;
  a.optimizer_bytes_per_rank = a.params_per_rank * kOptimizerStateBytes;
  a.fp32_grad_bytes_per_rank = a.params_per_rank * kFp32GradBytes;

  // Every weight except the embedding lookup takes part in a matmul (2 FLOPs per
  // multiply-add): forward 2N, backward 4N. Attention scores and the weighted sum add
  // 2 x 2 x seq x hidden per token per layer forward (full, un-masked count, as Megatron
  // reports it), times 3 for forward + backward.
  const double matmul_params = static_cast<double>(n - a.params.embedding + (spec.tied_embeddings ? a.params.embedding : 0));
  const double attn_fwd = 4.0 * static_cast<double>(shape.seq_len) * static_cast<double>(spec.hidden) *
                          static_cast<double>(spec.layers);
  a.model_flops_per_token = 6.0 * matmul_params + 3.0 * attn_fwd;
  a.hardware_flops_per_token = 8.0 * matmul_params + 4.0 * attn_fwd;  // forward recomputed once
  a.tokens_per_iteration = ranks * shape.micro_batch * shape.seq_len * shape.grad_accum;

  // Checkpointing keeps each layer's bf16 input; backward recomputes one layer at a time,
  // whose bf16 activations are about (10 x hidden + 4 x ffn) per token (norm outputs, q, k,
  // v, attention output, gate, up, their product), plus fp32 logits for the loss.
  const std::int64_t tokens = shape.micro_batch * shape.seq_len;
  a.activation_checkpoint_bytes_per_rank = tokens * spec.hidden * kBf16Bytes * spec.layers;
  a.activation_working_bytes_per_rank =
      tokens * (10 * spec.hidden + 4 * spec.ffn_hidden) * kBf16Bytes + tokens * spec.vocab * 4;
  return a;
}

Json to_json(const Accounting& a) {
  return Json{
      {"model", a.spec.name},
      {"params", a.params.total},
      {"params_breakdown",
       {{"embedding", a.params.embedding},
        {"lm_head", a.params.lm_head},
        {"attention", a.params.attention},
        {"mlp", a.params.mlp},
        {"norms", a.params.norms},
        {"per_layer", a.params.per_layer}}},
      {"cluster",
       {{"nodes", a.shape.nodes},
        {"gpus_per_node", a.shape.gpus_per_node},
        {"ranks", a.shape.ranks()},
        {"micro_batch", a.shape.micro_batch},
        {"seq_len", a.shape.seq_len},
        {"grad_accum", a.shape.grad_accum}}},
      {"params_per_rank", a.params_per_rank},
      {"bytes",
       {{"weights_bf16", a.weights_bf16_bytes},
        {"grads_bf16", a.grads_bf16_bytes},
        {"optimizer_state", a.optimizer_bytes},
        {"per_rank",
         {{"weights_bf16", a.weights_bf16_bytes_per_rank},
          {"grads_bf16", a.grads_bf16_bytes_per_rank},
          {"optimizer_state", a.optimizer_bytes_per_rank},
          {"fp32_grads_baseline", a.fp32_grad_bytes_per_rank},
          {"activation_checkpoints", a.activation_checkpoint_bytes_per_rank},
          {"activation_working", a.activation_working_bytes_per_rank}}}}},
      {"flops_per_token", {{"model", a.model_flops_per_token}, {"hardware", a.hardware_flops_per_token}}},
      {"tokens_per_iteration", a.tokens_per_iteration},
      {"model_spec", to_json(a.spec)},
  };
}

}  // namespace mlpo
