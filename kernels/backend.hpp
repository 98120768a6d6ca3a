#pragma once
// Backend: the compute operations a LLaMA-style decoder needs, forward and backward, over
// Tensor views of memory the backend itself allocated. The CPU backend (kernels/cpu) is the
// reference; a CUDA backend implements the same interface. The model (executor/model) is
// written only against this class, so both run the same sequence of operations.
//
// Conventions every implementation keeps:
//  * Storage type T of weights and activations is bf16 in training (f32 and, on the CPU,
//    f64 are also accepted, for tests). Arithmetic happens in the accumulation type A:
//    f32 for bf16/f32 storage, f64 for f64. Results are rounded to T once, at the store
//    (round to nearest even for bf16).
//  * Tensors named `d...w` (weight gradients) are of type A and are ACCUMULATED (+=), so that
//    micro-batches sum up in one buffer. Every other output (activations and activation
//    gradients) is OVERWRITTEN, except where a flag says otherwise.
//  * Row statistics saved for backward (`rstd`, `lse`) and per-token losses are of type A.
//  * Shapes: N = B*T rows (tokens), C channels. Attention tensors are [B, T, heads, head_dim]
//    (which is the linear layer's [N, heads*head_dim] output read with heads split off).
//  * Deterministic: the same inputs give bitwise the same outputs on every call, whatever the
//    number of threads. No op keeps state between calls except reusable scratch memory, so a
//    Backend is used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "kernels/tensor.hpp"

namespace mlpo {

// DeviceBuffer: owns one allocation of a Backend and frees it on destruction (move-only).
class DeviceBuffer {
 public:
  using Release = void (*)(void*);
  DeviceBuffer() = default;
  DeviceBuffer(void* data, std::size_t bytes, Release release) : data_(data, release), bytes_(bytes) {}

  void* data() const { return data_.get(); }
  std::size_t bytes() const { return bytes_; }

  // The whole buffer, or its first elements, seen as a tensor.
  Tensor view(DType type, std::initializer_list<std::int64_t> dims) const {
    Tensor t(data_.get(), type, dims);
    MLPO_CHECK(t.bytes() <= bytes_,
               "view " + t.describe() + " exceeds a " + std::to_string(bytes_) + "-byte buffer");
    return t;
  }

 private:
  std::unique_ptr<void, Release> data_{nullptr, nullptr};
  std::size_t bytes_ = 0;
};

// The same owner for host memory a Backend hands out (allocate_host): pinned on a GPU.
using HostBuffer = DeviceBuffer;

// CopyQueue: copies between host and device memory that run beside a Backend's ops — on CUDA
// a copy stream of its own, ordered against the compute stream with events; on the CPU backend
// (whose "device" memory is host memory and whose ops finish before they return) a memcpy done
// at once. Two queues are independent of each other (weight fetches in one, gradient copies
// in another, overlap each other and the ops).
//
// Ordering contract, the only one a caller may rely on:
//  * a copy starts only after every op enqueued on the backend before the copy call has
//    finished — so it may read what those ops wrote, or overwrite what they read;
//  * ops enqueued after order_compute_after_copies() start only after every copy enqueued on
//    this queue before it has finished;
//  * host memory a copy reads or writes must stay untouched (and alive) until wait() returns
//    or a later op ordered after the copy has run. For the copy to overlap anything the host
//    memory must come from Backend::allocate_host (pinned on CUDA).
// Not thread-safe; the backend's driving thread uses it.
class CopyQueue {
 public:
  virtual ~CopyQueue() = default;
  virtual void to_device(Tensor dst, const void* src) = 0;  // dst.bytes() bytes, returns at once
  virtual void to_host(void* dst, Tensor src) = 0;          // src.bytes() bytes, returns at once
  virtual void order_compute_after_copies() = 0;
  // Blocks the host until every copy enqueued so far has finished.
  virtual void wait() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda:0", for logs.
  virtual std::string name() const = 0;

  // ---- memory -------------------------------------------------------------------------
  // Device memory of `bytes` bytes, 64-byte aligned, uninitialised.
  virtual DeviceBuffer allocate(std::size_t bytes) = 0;
  DeviceBuffer allocate(DType type, std::int64_t count) {
    return allocate(static_cast<std::size_t>(count) * dtype_size(type));
  }
  // Synchronous: when they return the copy is complete and the host memory may be reused.
  virtual void copy_from_host(Tensor dst, const void* src) = 0;  // dst.bytes() bytes
  virtual void copy_to_host(void* dst, Tensor src) = 0;          // src.bytes() bytes
  // Host memory this backend's copies move fastest and asynchronously: page-locked
  // (cudaMallocHost) on CUDA; by default 64-byte aligned ordinary memory. Uninitialised.
  virtual HostBuffer allocate_host(std::size_t bytes) {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    MLPO_CHECK(p != nullptr, "out of host memory allocating " + std::to_string(bytes) + " bytes");
    return HostBuffer(p, bytes, &std::free);
  }
  // Blocks until every op enqueued so far has finished (not the copy queues). The CPU
  // backend's ops finish before they return: nothing to wait for. For honest phase timings.
  virtual void synchronize() {}
  // A new queue of asynchronous host<->device copies (CopyQueue). The default is synchronous:
  // each copy is copy_from_host / copy_to_host at once, which keeps the contract for a backend
  // whose ops complete before they return (the CPU backend).
  virtual std::unique_ptr<CopyQueue> make_copy_queue();
  virtual void copy(Tensor dst, Tensor src) = 0;    // same type and count
  virtual void fill(Tensor dst, double value) = 0;  // value rounded to dst's type
  // dst = src converted element-wise (bf16 <-> f32 <-> f64; round to nearest even).
  virtual void cast(Tensor dst, Tensor src) = 0;

  // ---- elementwise --------------------------------------------------------------------
  // out = a + b (residual connections, summing gradient branches). out may alias a or b.
  virtual void add(Tensor out, Tensor a, Tensor b) = 0;

  // ---- embedding ----------------------------------------------------------------------
  // out[n, :] = table[tokens[n], :].  tokens: i32 [N], table: [V, C], out: [N, C].
  // Throws mlpo::Error when a token is outside [0, V).
  virtual void embedding_forward(Tensor out, Tensor tokens, Tensor table) = 0;
  // dtable[tokens[n], :] += dout[n, :] (dtable is of type A).
  virtual void embedding_backward(Tensor dtable, Tensor tokens, Tensor dout) = 0;

  // ---- RMSNorm: out = x / sqrt(mean(x^2) + eps) * weight --------------------------------
  // x, out: [N, C]; weight: [C]; rstd: A [N] (saved 1/sqrt(mean(x^2)+eps)).
  virtual void rmsnorm_forward(Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) = 0;
  // dx overwritten; dweight (A [C]) accumulated. dx may not alias dout.
  virtual void rmsnorm_backward(Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                                Tensor rstd) = 0;

  // ---- linear (no bias): out = x @ w^T, w stored [out_features, in_features] ------------
  // x: [N, I]; w: [O, I]; out: [N, O].
  virtual void linear_forward(Tensor out, Tensor x, Tensor w) = 0;
  // dx = dout @ w (overwritten, or added to when accumulate_dx); dw += dout^T @ x (A [O, I]).
  virtual void linear_backward(Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w, bool accumulate_dx) = 0;

  // ---- rotary position embedding (LLaMA / Hugging Face "rotate_half" pairing) -----------
  // x, out: [B, T, H, D]; element i < D/2 pairs with i + D/2 and is rotated by angle
  // t * theta^(-2i/D) at position t. out may alias x.
  virtual void rope_forward(Tensor out, Tensor x, float theta) = 0;
  // dx = rotation by the opposite angle; dx may alias dout.
  virtual void rope_backward(Tensor dx, Tensor dout, float theta) = 0;

  // ---- causal grouped-query attention ---------------------------------------------------
  // q: [B, T, Hq, D]; k, v: [B, T, Hkv, D] with Hq % Hkv == 0 (query head h reads kv head
  // h / (Hq/Hkv)); out: [B, T, Hq, D]; lse: A [B, Hq, T] = log-sum-exp of each softmax row.
  // Scores are q.k / sqrt(D), position t attends to positions <= t.
  virtual void attention_forward(Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) = 0;
  // dq, dk, dv overwritten. Probabilities are recomputed from q, k and lse, and the softmax
  // backward's row term delta_t = sum_j p_tj (dout_t . v_j) in A — not dout_t . out_t from the
  // rounded out, which is off by as much as the signal while attention is near uniform.
  // `out` (the forward's) is only checked for shape.
  virtual void attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k, Tensor v,
                                  Tensor out, Tensor lse) = 0;

  // ---- SwiGLU: out = silu(gate) * up ----------------------------------------------------
  virtual void swiglu_forward(Tensor out, Tensor gate, Tensor up) = 0;
  virtual void swiglu_backward(Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) = 0;

  // ---- softmax cross-entropy ------------------------------------------------------------
  // losses[n] = logsumexp(logits[n, :]) - logits[n, targets[n]].  logits: [N, V]; targets:
  // i32 [N]; losses: A [N]. Throws mlpo::Error when a target is outside [0, V).
  virtual void cross_entropy_forward(Tensor losses, Tensor logits, Tensor targets) = 0;
  // dlogits[n, :] = scale * (softmax(logits[n, :]) - onehot(targets[n])). dlogits may alias
  // logits (each row is read completely before it is written).
  virtual void cross_entropy_backward(Tensor dlogits, Tensor logits, Tensor targets, float scale) = 0;
};

namespace detail {
class ImmediateCopyQueue final : public CopyQueue {
 public:
  explicit ImmediateCopyQueue(Backend& backend) : backend_(backend) {}
  void to_device(Tensor dst, const void* src) override { backend_.copy_from_host(dst, src); }
  void to_host(void* dst, Tensor src) override { backend_.copy_to_host(dst, src); }
  void order_compute_after_copies() override {}
  void wait() override {}

 private:
  Backend& backend_;
};
}  // namespace detail

inline std::unique_ptr<CopyQueue> Backend::make_copy_queue() {
  return std::make_unique<detail::ImmediateCopyQueue>(*this);
}

}  // namespace mlpo
