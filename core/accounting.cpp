#include "core/accounting.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/rank_shard.hpp"

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

namespace {

// The per-iteration token and activation counts below are int64: refuse a shape whose counts
// would overflow (computed here in double, which cannot), naming the flags that make them.
void check_shape_counts(const ModelSpec& spec, const ClusterShape& shape) {
  constexpr double kLimit = static_cast<double>(std::int64_t{1} << 62);
  const double tokens = static_cast<double>(shape.micro_batch) * static_cast<double>(shape.seq_len);
  const double global_tokens = tokens * static_cast<double>(shape.nodes) *
                               static_cast<double>(shape.ranks_per_node) *
                               static_cast<double>(shape.grad_accum);
  char text[200];
  if (global_tokens > kLimit) {
    std::snprintf(text, sizeof text,
                  "%.3g tokens per iteration, more than 64 bits count (%.3g); make them smaller",
                  global_tokens, kLimit);
    throw Error(std::string("--nodes x --gpus-per-node x --micro-batch x --seq-len x --grad-accum: ") + text);
  }
  const double per_token =
      static_cast<double>(spec.hidden) * static_cast<double>(spec.layers) * kBf16Bytes +
      (10.0 * static_cast<double>(spec.hidden) + 4.0 * static_cast<double>(spec.ffn_hidden)) * kBf16Bytes +
      static_cast<double>(spec.vocab) * 4;
  if (tokens * per_token > kLimit) {
    std::snprintf(text, sizeof text,
                  "%.3g bytes of activations per rank, more than 64 bits count (%.3g); make them smaller",
                  tokens * per_token, kLimit);
    throw Error(std::string("--micro-batch x --seq-len: ") + text);
  }
}

}  // namespace

double layer_forward_flops_per_token(const ModelSpec& spec, std::int64_t seq_len) {
  const double attention = 4.0 * static_cast<double>(seq_len) * static_cast<double>(spec.hidden);
  return 2.0 * static_cast<double>(count_params(spec).per_layer) + attention;
}

double head_forward_flops_per_token(const ModelSpec& spec) {
  return 2.0 * (static_cast<double>(spec.vocab) * static_cast<double>(spec.hidden) +
                static_cast<double>(spec.hidden));
}

Accounting account(const ModelSpec& spec, const ClusterShape& shape_in) {
  ClusterShape shape = shape_in;
  if (shape.seq_len == 0) shape.seq_len = spec.seq_len;
  const std::pair<const char*, std::int64_t> fields[] = {{"--nodes", shape.nodes},
                                                         {"--gpus-per-node", shape.ranks_per_node},
                                                         {"--micro-batch", shape.micro_batch},
                                                         {"--seq-len", shape.seq_len},
                                                         {"--grad-accum", shape.grad_accum}};
  for (const auto& [name, v] : fields)
    if (v <= 0) throw Error(std::string(name) + ": must be > 0, got " + std::to_string(v));
  check_shape_counts(spec, shape);

  Accounting a;
  a.spec = spec;
  a.shape = shape;
  a.params = count_params(spec);
  const std::int64_t n = a.params.total;
  const std::int64_t ranks = shape.ranks();
  a.params_per_rank = unrounded_share(n, ranks);
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
  const double matmul_params =
      static_cast<double>(n - a.params.embedding + (spec.tied_embeddings ? a.params.embedding : 0));
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
        {"gpus_per_node", a.shape.ranks_per_node},
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

#include <cstdio>

#include "core/units.hpp"

namespace mlpo {

namespace {

std::string with_commas(std::int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string describe(const Accounting& a) {
  const ModelSpec& s = a.spec;
  std::string out;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("model %s: %s parameters\n", s.name.c_str(), with_commas(a.params.total).c_str());
  add("  shape: vocab %lld, hidden %lld, layers %lld, heads %lld (kv %lld, head_dim %lld), ffn %lld, seq "
      "%lld%s\n",
      (long long)s.vocab, (long long)s.hidden, (long long)s.layers, (long long)s.heads, (long long)s.kv_heads,
      (long long)s.head_dim(), (long long)s.ffn_hidden, (long long)s.seq_len,
      s.tied_embeddings ? ", tied embeddings" : "");
  add("  parameters: embedding %s, lm_head %s, attention %s, mlp %s, norms %s (per layer %s)\n",
      with_commas(a.params.embedding).c_str(), with_commas(a.params.lm_head).c_str(),
      with_commas(a.params.attention).c_str(), with_commas(a.params.mlp).c_str(),
      with_commas(a.params.norms).c_str(), with_commas(a.params.per_layer).c_str());
  add("cluster: %lld node(s) x %lld GPU(s) = %lld ranks, micro-batch %lld, seq %lld, grad-accum %lld\n",
      (long long)a.shape.nodes, (long long)a.shape.ranks_per_node, (long long)a.shape.ranks(),
      (long long)a.shape.micro_batch, (long long)a.shape.seq_len, (long long)a.shape.grad_accum);
  add("  whole model: bf16 weights %s, bf16 grads %s, optimizer state (fp32 p+m+v) %s\n",
      format_bytes(static_cast<double>(a.weights_bf16_bytes)).c_str(),
      format_bytes(static_cast<double>(a.grads_bf16_bytes)).c_str(),
      format_bytes(static_cast<double>(a.optimizer_bytes)).c_str());
  add("  per rank (ZeRO-3): %s params; bf16 weights %s, bf16 grads %s, optimizer state %s (+%s fp32 grads in "
      "baseline)\n",
      with_commas(a.params_per_rank).c_str(),
      format_bytes(static_cast<double>(a.weights_bf16_bytes_per_rank)).c_str(),
      format_bytes(static_cast<double>(a.grads_bf16_bytes_per_rank)).c_str(),
      format_bytes(static_cast<double>(a.optimizer_bytes_per_rank)).c_str(),
      format_bytes(static_cast<double>(a.fp32_grad_bytes_per_rank)).c_str());
  add("  activations per rank (per-layer checkpointing): checkpoints %s + working set %s\n",
      format_bytes(static_cast<double>(a.activation_checkpoint_bytes_per_rank)).c_str(),
      format_bytes(static_cast<double>(a.activation_working_bytes_per_rank)).c_str());
  add("  training FLOPs per token: %.3g (model), %.3g (with recompute); %s tokens per iteration\n",
      a.model_flops_per_token, a.hardware_flops_per_token, with_commas(a.tokens_per_iteration).c_str());
  return out;
}

}  // namespace mlpo
