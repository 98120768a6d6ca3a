#include "executor/model/transformer_model.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::model {

std::int64_t streamed_part_gradient_elements(const ParameterLayout& layout) {
  std::int64_t n = layout.head_range().count;
  for (int l = 0; l < layout.layers(); ++l) n = std::max(n, layout.layer_range(l).count);
  if (!layout.tied()) n = std::max(n, layout.embedding_range().count);
  return n;
}

std::int64_t streamed_gradient_elements(const ParameterLayout& layout) {
  return streamed_part_gradient_elements(layout) + (layout.tied() ? layout.embedding_range().count : 0);
}

TransformerModel::TransformerModel(Backend& backend, const ModelShape& shape, TransformerOptions options,
                                   WeightProvider* weights)
    : backend_(backend),
      shape_(shape),
      layout_(shape),
      options_(options),
      tokens_(static_cast<std::int64_t>(options.batch) * shape.seq_len),
      acc_(options.storage == DType::f64 ? DType::f64 : DType::f32) {
  if (options.batch <= 0) throw Error("model: batch must be positive, got " + std::to_string(options.batch));
  MLPO_CHECK(options.storage != DType::i32, "model storage must be a floating-point type");
  const DType T = options.storage;
  const std::int64_t N = tokens_, h = shape.hidden, kv = shape.kv_dim(), f = shape.ffn_hidden,
                     V = shape.vocab;
  if (weights == nullptr) {
    own_weights_ = std::make_unique<ResidentWeights>(backend, layout_, T);
    weights = own_weights_.get();
  }
  provider_ = weights;
  resident_ = dynamic_cast<ResidentWeights*>(weights);
  MLPO_CHECK(provider_->storage() == T, std::string("weight provider of ") +
                                            dtype_name(provider_->storage()) + " for a model stored in " +
                                            dtype_name(T));
  if (!options.stream_gradients) {
    grads_ = activation(acc_, {layout_.total()});
  } else {
    if (shape.tied_embeddings) embedding_grads_ = activation(acc_, {layout_.embedding_range().count});
    part_grads_ = activation(acc_, {streamed_part_gradient_elements(layout_)});
  }
  token_ids_ = activation(DType::i32, {N});
  target_ids_ = activation(DType::i32, {N});
  for (int l = 0; l <= shape.layers; ++l) residual_.push_back(activation(T, {N, h}));
  for (Tensor* t : {&xn1_, &att_, &proj_, &hmid_, &xn2_, &layer_out_, &xf_, &d_xn_, &d_tmp_, &d_h_, &d_att_,
                    &dq_, &dres_})
    *t = activation(T, {N, h});
  for (Tensor* t : {&k_, &v_, &dk_, &dv_}) *t = activation(T, {N, kv});
  for (Tensor* t : {&gate_, &up_, &act_, &d_act_, &d_gate_, &d_up_}) *t = activation(T, {N, f});
  q_ = activation(T, {N, h});
  for (Tensor* t : {&rstd1_, &rstd2_, &rstdf_, &losses_}) *t = activation(acc_, {N});
  lse_ = activation(acc_, {options.batch, shape.heads, shape.seq_len});
  logits_ = activation(T, {N, V});
  zero_gradients();
}

Tensor TransformerModel::activation(DType type, std::initializer_list<std::int64_t> dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  owned_.push_back(backend_.allocate(type, n));
  return owned_.back().view(type, dims);
}

Tensor TransformerModel::param(Tensor flat, const ParameterEntry& e) const {
  if (e.shape.size() == 1) return flat.slice(e.offset, {e.shape[0]});
  return flat.slice(e.offset, {e.shape[0], e.shape[1]});
}

ResidentWeights& TransformerModel::resident() const {
  MLPO_CHECK(resident_ != nullptr,
             "the model's weights are not resident (they come from a streaming provider)");
  return *resident_;
}

Tensor TransformerModel::gradients() const {
  MLPO_CHECK(!options_.stream_gradients, "the model streams its gradients: there is no full gradient buffer");
  return grads_;
}

void TransformerModel::zero_gradients() {
  if (!options_.stream_gradients) backend_.fill(grads_, 0.0);
}

void TransformerModel::begin_part_gradient(ParameterRange range) {
  if (!options_.stream_gradients) return;
  part_range_ = range;
  backend_.fill(part_gradient(range), 0.0);
}

Tensor TransformerModel::part_gradient(ParameterRange range) const {
  if (!options_.stream_gradients) return grads_.slice(range.offset, {range.count});
  if (shape_.tied_embeddings && range.offset == layout_.embedding_range().offset &&
      range.count == layout_.embedding_range().count)
    return embedding_grads_;
  MLPO_CHECK(range.offset == part_range_.offset && range.count == part_range_.count,
             "streamed gradient of another part");
  return part_grads_.slice(0, {range.count});
}

Tensor TransformerModel::grad(const ParameterEntry& e) const {
  if (!options_.stream_gradients) return param(grads_, e);
  const ParameterRange emb = layout_.embedding_range();
  const bool in_embedding =
      shape_.tied_embeddings && e.offset >= emb.offset && e.offset + e.numel() <= emb.offset + emb.count;
  const ParameterRange r = in_embedding ? emb : part_range_;
  MLPO_CHECK(e.offset >= r.offset && e.offset + e.numel() <= r.offset + r.count,
             e.name + " is outside the part being differentiated");
  const Tensor buffer = in_embedding ? embedding_grads_ : part_grads_;
  ParameterEntry local = e;
  local.offset = e.offset - r.offset;
  return param(buffer, local);
}

// x_{l+1} = h + W_down (silu(W_gate n2) * W_up n2),  n2 = rmsnorm(h),
// h = x_l + W_o attention(rope(W_q n1), rope(W_k n1), W_v n1),  n1 = rmsnorm(x_l).
void TransformerModel::layer_forward(int l, const AcquiredPart& w, Tensor x, Tensor y) {
  const LayerParameters& P = layout_.layer(l);
  const std::int64_t B = options_.batch, T = shape_.seq_len, D = shape_.head_dim();
  Tensor q4 = q_.reshaped({B, T, shape_.heads, D}), k4 = k_.reshaped({B, T, shape_.kv_heads, D});
  Tensor v4 = v_.reshaped({B, T, shape_.kv_heads, D}), att4 = att_.reshaped({B, T, shape_.heads, D});
  backend_.rmsnorm_forward(xn1_, rstd1_, x, w.entry(P.attn_norm), shape_.norm_eps);
  backend_.linear_forward(q_, xn1_, w.entry(P.wq));
  backend_.linear_forward(k_, xn1_, w.entry(P.wk));
  backend_.linear_forward(v_, xn1_, w.entry(P.wv));
  backend_.rope_forward(q4, q4, shape_.rope_theta);
  backend_.rope_forward(k4, k4, shape_.rope_theta);
  backend_.attention_forward(att4, lse_, q4, k4, v4);
  backend_.linear_forward(proj_, att_, w.entry(P.wo));
  backend_.add(hmid_, x, proj_);
  backend_.rmsnorm_forward(xn2_, rstd2_, hmid_, w.entry(P.mlp_norm), shape_.norm_eps);
  backend_.linear_forward(gate_, xn2_, w.entry(P.w_gate));
  backend_.linear_forward(up_, xn2_, w.entry(P.w_up));
  backend_.swiglu_forward(act_, gate_, up_);
  backend_.linear_forward(proj_, act_, w.entry(P.w_down));
  backend_.add(y, hmid_, proj_);
}

double TransformerModel::forward(std::span<const std::int32_t> tokens,
                                 std::span<const std::int32_t> targets) {
  if (static_cast<std::int64_t>(tokens.size()) != tokens_ ||
      static_cast<std::int64_t>(targets.size()) != tokens_)
    throw Error("model: a micro-batch is " + std::to_string(tokens_) + " tokens (batch " +
                std::to_string(options_.batch) + " x seq_len " + std::to_string(shape_.seq_len) + "), got " +
                std::to_string(tokens.size()) + " tokens and " + std::to_string(targets.size()) + " targets");
  backend_.copy_from_host(token_ids_, tokens.data());
  backend_.copy_from_host(target_ids_, targets.data());
  provider_->begin_pass(WeightPass::forward);
  {
    const AcquiredPart w(*provider_, WeightPart::embedding());
    backend_.embedding_forward(residual_[0], token_ids_, w.entry(layout_.embedding()));
  }
  for (int l = 0; l < shape_.layers; ++l) {
    const AcquiredPart w(*provider_, WeightPart::transformer_layer(l));
    layer_forward(l, w, residual_[l], residual_[l + 1]);
  }
  {
    const AcquiredPart w(*provider_, WeightPart::head());
    backend_.rmsnorm_forward(xf_, rstdf_, residual_[shape_.layers], w.entry(layout_.final_norm()),
                             shape_.norm_eps);
    backend_.linear_forward(logits_, xf_, w.entry(layout_.lm_head()));
  }
  backend_.cross_entropy_forward(losses_, logits_, target_ids_);
  forward_pending_ = true;

  // Mean over tokens, summed on the host in token order (fixed, plan-independent).
  double sum = 0;
  if (acc_ == DType::f64) {
    std::vector<double> host(static_cast<std::size_t>(tokens_));
    backend_.copy_to_host(host.data(), losses_);
    for (double x : host) sum += x;
  } else {
    std::vector<float> host(static_cast<std::size_t>(tokens_));
    backend_.copy_to_host(host.data(), losses_);
    for (float x : host) sum += x;
  }
  return sum / static_cast<double>(tokens_);
}

// dres holds dL/dx_{l+1} on entry and dL/dx_l on return.
void TransformerModel::layer_backward(int l, const AcquiredPart& w, Tensor x, Tensor dres) {
  const LayerParameters& P = layout_.layer(l);
  const std::int64_t B = options_.batch, T = shape_.seq_len, D = shape_.head_dim();
  const float theta = shape_.rope_theta;
  Tensor q4 = q_.reshaped({B, T, shape_.heads, D}), k4 = k_.reshaped({B, T, shape_.kv_heads, D});
  Tensor v4 = v_.reshaped({B, T, shape_.kv_heads, D}), att4 = att_.reshaped({B, T, shape_.heads, D});
  Tensor dq4 = dq_.reshaped({B, T, shape_.heads, D}), dk4 = dk_.reshaped({B, T, shape_.kv_heads, D});
  Tensor dv4 = dv_.reshaped({B, T, shape_.kv_heads, D}), datt4 = d_att_.reshaped({B, T, shape_.heads, D});

  // MLP branch: y = h + W_down act.
  backend_.linear_backward(d_act_, grad(P.w_down), dres, act_, w.entry(P.w_down), false);
  backend_.swiglu_backward(d_gate_, d_up_, d_act_, gate_, up_);
  backend_.linear_backward(d_xn_, grad(P.w_gate), d_gate_, xn2_, w.entry(P.w_gate), false);
  backend_.linear_backward(d_xn_, grad(P.w_up), d_up_, xn2_, w.entry(P.w_up), true);
  backend_.rmsnorm_backward(d_tmp_, grad(P.mlp_norm), d_xn_, hmid_, w.entry(P.mlp_norm), rstd2_);
  backend_.add(d_h_, dres, d_tmp_);  // residual: dL/dh = dL/dy + (through the MLP)

  // Attention branch: h = x + W_o attention(...).
  backend_.linear_backward(d_att_, grad(P.wo), d_h_, att_, w.entry(P.wo), false);
  backend_.attention_backward(dq4, dk4, dv4, datt4, q4, k4, v4, att4, lse_);
  backend_.rope_backward(dq4, dq4, theta);
  backend_.rope_backward(dk4, dk4, theta);
  backend_.linear_backward(d_xn_, grad(P.wq), dq_, xn1_, w.entry(P.wq), false);
  backend_.linear_backward(d_xn_, grad(P.wk), dk_, xn1_, w.entry(P.wk), true);
  backend_.linear_backward(d_xn_, grad(P.wv), dv_, xn1_, w.entry(P.wv), true);
  backend_.rmsnorm_backward(d_tmp_, grad(P.attn_norm), d_xn_, x, w.entry(P.attn_norm), rstd1_);
  backend_.add(dres, d_h_, d_tmp_);
}

void TransformerModel::backward(float loss_scale, const GradientsReady& on_ready) {
  MLPO_CHECK(forward_pending_, "backward() needs a forward() since the last backward()");
  forward_pending_ = false;
  auto ready = [&](GradientSegment::Part part, int layer, ParameterRange range) {
    if (on_ready) on_ready(GradientSegment{part, layer, range, part_gradient(range)});
  };

  provider_->begin_pass(WeightPass::backward);
  if (options_.stream_gradients) {
    begin_part_gradient(layout_.head_range());
    if (shape_.tied_embeddings) backend_.fill(embedding_grads_, 0.0);
  }
  // Head: loss -> logits -> final norm. dlogits overwrite the logits.
  {
    const AcquiredPart w(*provider_, WeightPart::head());
    backend_.cross_entropy_backward(logits_, logits_, target_ids_, loss_scale / static_cast<float>(tokens_));
    backend_.linear_backward(d_xn_, grad(layout_.lm_head()), logits_, xf_, w.entry(layout_.lm_head()), false);
    backend_.rmsnorm_backward(dres_, grad(layout_.final_norm()), d_xn_, residual_[shape_.layers],
                              w.entry(layout_.final_norm()), rstdf_);
  }
  ready(GradientSegment::Part::head, -1, layout_.head_range());

  for (int l = shape_.layers - 1; l >= 0; --l) {
    {
      const AcquiredPart w(*provider_, WeightPart::transformer_layer(l));
      begin_part_gradient(layout_.layer_range(l));
      // Checkpointing: rebuild this layer's intermediates from its saved input. After forward the
      // scratch still holds the last layer's, so that one is not recomputed.
      if (l != shape_.layers - 1) layer_forward(l, w, residual_[l], layer_out_);
      layer_backward(l, w, residual_[l], dres_);
    }
    ready(GradientSegment::Part::layer, l, layout_.layer_range(l));
  }

  if (!shape_.tied_embeddings) begin_part_gradient(layout_.embedding_range());
  backend_.embedding_backward(grad(layout_.embedding()), token_ids_, dres_);
  ready(GradientSegment::Part::embedding, -1, layout_.embedding_range());
}

}  // namespace mlpo::model
