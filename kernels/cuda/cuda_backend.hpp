#pragma once
// CudaBackend: Backend (kernels/backend.hpp) on one NVIDIA GPU. Every op enqueues its kernels
// on one compute stream and returns without waiting; the host blocks only in copy_to_host /
// copy_from_host (which are synchronous, so host memory may be reused when they return) and in
// the token/target range checks of embedding and cross-entropy (one int read back each).
// Device-to-device copies and fills are stream-ordered like the ops.
//
// Kernels live one family per .cu file (ops_*.cu); GEMMs go through cuBLASLt (gemm.hpp).
// Attention runs on one of two paths (kernels/attention_path.hpp), chosen at construction.
// Storage types: bf16 and f32 (f64 is the CPU backend's test-only type; asking for it aborts).
// Deterministic: no atomics in sums, fixed reduction orders, one cuBLASLt algorithm per shape,
// so the same inputs give bitwise the same outputs on the same GPU model.
//
// Memory: allocate() is cudaMalloc (256-byte aligned), freed by the returned DeviceBuffer. A
// shortfall throws mlpo::Error with the request and the free memory. allocate_host() is
// page-locked host memory (cudaMallocHost); make_copy_queue() a CudaCopyQueue on its own
// stream, ordered against the compute stream with events (cuda_copy_queue.hpp). Scratch for ops grows on
// demand and is kept. Construct only where cuda_available() says a device is usable: the
// constructor throws mlpo::Error with the reason otherwise. Not thread-safe: one thread drives
// a backend at a time (and must have the backend's device current, which the constructor sets).

#include <memory>

#include "core/attention_blocking.hpp"
#include "kernels/attention_path.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/internal/id_ranges.hpp"
#include "kernels/cuda/ops.hpp"

namespace mlpo {

struct CudaBackendOptions {
  AttentionPath attention = kDefaultAttentionPath;
  // The GEMM attention's bound on one block's score elements (core/attention_blocking.hpp);
  // smaller only in tests, to cross its block and pair boundaries on small shapes.
  std::int64_t attention_score_elements = kMaxScoreElements;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device = 0, CudaBackendOptions options = {});
  ~CudaBackend() override;

  std::string name() const override { return "cuda:" + std::to_string(device_); }
  int device() const { return device_; }
  AttentionPath attention_path() const { return options_.attention; }
  // Upper bound of the device memory the backend allocates for itself (cuBLASLt workspace and
  // op scratch) running a model of `hidden` channels whose attention has the dims `attention`
  // (micro-batch, sequence, heads, kv heads, head dim) on `path`, for the up-front memory check
  // (executor/model/device_memory.hpp).
  static std::size_t scratch_bound(std::int64_t hidden, const AttentionDims& attention, AttentionPath path);
  // The stream every op runs on. Other streams order themselves against it with events.
  cudaStream_t compute_stream() const { return stream_.get(); }
  // Blocks until every op enqueued so far has finished.
  void synchronize() override { stream_.synchronize(); }

  DeviceBuffer allocate(std::size_t bytes) override;
  using Backend::allocate;
  HostBuffer allocate_host(std::size_t bytes) override;
  std::unique_ptr<CopyQueue> make_copy_queue() override;
  void copy_from_host(Tensor dst, const void* src) override;
  void copy_to_host(void* dst, Tensor src) override;
  void copy(Tensor dst, Tensor src) override;
  void fill(Tensor dst, double value) override;
  void cast(Tensor dst, Tensor src) override;
  void add(Tensor out, Tensor a, Tensor b) override;

  void embedding_forward(Tensor out, Tensor tokens, Tensor table) override;
  void embedding_backward(Tensor dtable, Tensor tokens, Tensor dout) override;
  void rmsnorm_forward(Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) override;
  void rmsnorm_backward(Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                        Tensor rstd) override;
  void linear_forward(Tensor out, Tensor x, Tensor w) override;
  void linear_backward(Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w, bool accumulate_dx) override;
  void rope_forward(Tensor out, Tensor x, float theta) override;
  void rope_backward(Tensor dx, Tensor dout, float theta) override;
  void attention_forward(Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) override;
  void attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k, Tensor v,
                          Tensor out, Tensor lse) override;
  void swiglu_forward(Tensor out, Tensor gate, Tensor up) override;
  void swiglu_backward(Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) override;
  void cross_entropy_forward(Tensor losses, Tensor logits, Tensor targets) override;
  void cross_entropy_backward(Tensor dlogits, Tensor logits, Tensor targets, float scale) override;

 private:
  gpu::OpContext context() { return {stream_.get(), scratch_, &ids_, options_.attention_score_elements}; }

  int device_;
  CudaBackendOptions options_;
  gpu::Stream stream_;
  gpu::DeviceScratch scratch_;
  gpu::IdRanges ids_;
  std::unique_ptr<gpu::Gemm> gemm_;
};

}  // namespace mlpo
