#pragma once
// TransformerModel: a LLaMA-style decoder (RMSNorm, RoPE, causal grouped-query attention,
// SwiGLU MLP, optional tied embeddings) written only against the Backend interface, so the
// CPU and CUDA backends run the same sequence of ops.
//
// Weights come from a WeightProvider (weight_provider.hpp), acquired part by part (embedding,
// each layer, head) in a fixed order around each use; by default the model owns a
// ResidentWeights (one flat device buffer of the storage type in ParameterLayout order).
// Parameter offload and ZeRO-3 pass their own provider and then hold no full weight buffer.
//
// Memory it owns (on the backend's device):
//  * gradients: one flat buffer of the accumulation type (f32; f64 with f64 storage), same
//    layout. backward() ADDS into it, so micro-batches accumulate; zero_gradients() resets it.
//    Or, with options.stream_gradients (parameter offload of a model larger than the device),
//    no full buffer: each part's gradient of this micro-batch is computed into one reused
//    buffer of the largest part (plus one for the embedding with tied embeddings, as the
//    lm_head adds into it from the start of backward) and handed to the hook, which must take
//    it away (convert or copy it with ops it enqueues) before returning;
//  * activations for one micro-batch of `batch` sequences of shape.seq_len tokens.
//
// Activation checkpointing, per layer: forward keeps only each layer's input (the residual
// stream, N x hidden per layer) plus the head's activations; the attention/MLP intermediates
// live in one set of scratch buffers that every layer overwrites. backward recomputes a layer's
// forward from its saved input right before differentiating it (the last layer's scratch is
// still valid and is not recomputed). Recomputation runs the same deterministic ops on the same
// inputs, so it reproduces the forward activations bit for bit.
//
// Gradient hand-over: backward runs head -> layer L-1 -> ... -> layer 0 -> embedding and calls
// the GradientsReady hook as soon as each contiguous range of the gradient buffer is final for
// this micro-batch: first the head (final norm, and lm_head unless tied), then each layer, last
// the embedding (with tied embeddings the lm_head's gradient is part of it, so it is final only
// at the very end). The trainer can start converting / copying a range to host inside the hook.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "executor/model/parameter_layout.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/model/weight_provider.hpp"
#include "kernels/backend.hpp"

namespace mlpo::model {

struct TransformerOptions {
  int batch = 1;                // sequences per micro-batch (B)
  DType storage = DType::bf16;  // weights and activations: bf16, f32, or f64 (CPU, for tests)
  // false: one flat gradient buffer that backward() adds into. true: no full gradient on the
  // device; each part's gradient lives only until its GradientsReady hook returns.
  bool stream_gradients = false;
};

struct GradientSegment {
  enum class Part { head, layer, embedding };
  Part part = Part::head;
  int layer = -1;        // for Part::layer
  ParameterRange range;  // elements of the gradient that are now final
  // [range.count] of the gradient type on the device: the slice of gradients(), or with
  // stream_gradients this micro-batch's gradient of the range, which ops enqueued after the
  // hook returns may overwrite.
  Tensor gradient;
};
using GradientsReady = std::function<void(const GradientSegment&)>;

// stream_gradients: elements of the buffer reused for each part's gradient (the largest of
// head, layers and, untied, the embedding), and of all streamed gradient buffers (plus the
// tied embedding's own).
std::int64_t streamed_part_gradient_elements(const ParameterLayout& layout);
std::int64_t streamed_gradient_elements(const ParameterLayout& layout);

class TransformerModel {
 public:
  // `weights`: where forward and backward take the weights from (must outlive the model, and
  // hold options.storage); null: the model allocates and owns ResidentWeights.
  TransformerModel(Backend& backend, const ModelShape& shape, TransformerOptions options,
                   WeightProvider* weights = nullptr);

  const ModelShape& shape() const { return shape_; }
  const ParameterLayout& layout() const { return layout_; }
  int batch() const { return options_.batch; }
  std::int64_t tokens_per_step() const { return tokens_; }  // B * seq_len
  DType storage_type() const { return options_.storage; }
  DType gradient_type() const { return grads_.dtype; }

  WeightProvider& weight_provider() const { return *provider_; }
  // The flat weight buffer, [total] of the storage type, and the setters below: only for a
  // model whose weights are resident (the default; an internal error otherwise).
  Tensor weights() const { return resident().flat(); }
  // [total] of the gradient type; an internal error with stream_gradients (there is none).
  Tensor gradients() const;

  // Weights := initial_values(layout, seed) rounded to the storage type (on `threads` when given).
  void init_weights(std::uint64_t seed, ThreadPool* threads = nullptr) { resident().init(seed, threads); }
  // Weights := values (fp32, layout order, layout().total() of them) rounded to the storage type.
  void load_weights(std::span<const float> values) { resident().load(values); }
  // Resets gradients() to zero (nothing to do with stream_gradients: each part's buffer is
  // zeroed when backward reaches it).
  void zero_gradients();

  // Runs the model on tokens[B*T] and returns the mean cross-entropy against targets[B*T]
  // (host arrays, sequence-major). Throws mlpo::Error for tokens outside the vocabulary.
  double forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> targets);

  // Adds d(loss_scale * mean loss)/d(weights) of the last forward() to gradients(). Needs a
  // forward() since the previous backward() (the head's buffers are consumed in place).
  void backward(float loss_scale = 1.0f, const GradientsReady& on_ready = {});

 private:
  Tensor param(Tensor flat, const ParameterEntry& e) const;
  // Where backward adds the gradient of `e`: gradients(), or the streamed buffer of the part
  // being differentiated (begin_part_gradient) or of the embedding.
  Tensor grad(const ParameterEntry& e) const;
  // Streamed gradients: the part covering `range` starts; its buffer is zeroed.
  void begin_part_gradient(ParameterRange range);
  Tensor part_gradient(ParameterRange range) const;
  Tensor activation(DType type, std::initializer_list<std::int64_t> dims);
  ResidentWeights& resident() const;
  void layer_forward(int l, const AcquiredPart& w, Tensor x, Tensor y);
  void layer_backward(int l, const AcquiredPart& w, Tensor x, Tensor dres);

  Backend& backend_;
  ModelShape shape_;
  ParameterLayout layout_;
  TransformerOptions options_;
  std::int64_t tokens_;
  DType acc_;
  std::unique_ptr<ResidentWeights> own_weights_;
  WeightProvider* provider_;
  ResidentWeights* resident_;  // provider_ when it is resident, else null
  std::vector<DeviceBuffer> owned_;
  Tensor grads_;
  // stream_gradients: one buffer for the head or a layer (or, untied, the embedding), and the
  // tied embedding's own; `part_range_` says which range the part buffer holds now.
  Tensor part_grads_, embedding_grads_;
  ParameterRange part_range_{0, 0};
  Tensor token_ids_, target_ids_;
  std::vector<Tensor> residual_;  // layer inputs x_0 .. x_L (checkpoints)
  // One layer's forward intermediates (overwritten per layer).
  Tensor xn1_, rstd1_, q_, k_, v_, att_, lse_, proj_, hmid_, xn2_, rstd2_, gate_, up_, act_, layer_out_;
  // Head activations.
  Tensor xf_, rstdf_, logits_, losses_;
  // Backward scratch.
  Tensor d_act_, d_gate_, d_up_, d_xn_, d_tmp_, d_h_, d_att_, dq_, dk_, dv_, dres_;
  bool forward_pending_ = false;
};

}  // namespace mlpo::model
