#pragma once
// The CPU implementations of the Backend operations, one function per op (see
// kernels/backend.hpp for the contract of each). Each lives in an ops_<family>.cpp file as a
// plain loop over rows, threaded with the static-range ThreadPool, so every output element is
// computed by the same arithmetic in the same order whatever the thread count. The GEMM in
// linear layers has a reference loop and a BLAS fast path (ops_linear.cpp).

#include <cstdint>
#include <vector>

#include "core/thread_pool.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::cpu {

// Reusable fp32 staging memory for GEMMs on bf16 operands (grows, never shrinks).
class GemmScratch {
 public:
  float* get(int slot, std::int64_t count) {
    auto& v = slots_[slot];
    if (static_cast<std::int64_t>(v.size()) < count) v.resize(static_cast<std::size_t>(count));
    return v.data();
  }

 private:
  std::vector<float> slots_[3];
};

enum class GemmPath { blas, reference };

// Where the linear layers' time goes (seconds, summed over calls), for benchmarks: bf16<->fp32
// staging, and the three GEMMs (forward out = x w^T, backward dx = dout w, dw += dout^T x).
struct LinearStageTimes {
  double convert_s = 0, forward_s = 0, backward_dx_s = 0, backward_dw_s = 0;
};

struct LinearContext {
  ThreadPool& pool;
  GemmScratch& scratch;
  GemmPath path;
  unsigned gemm_parts = 1;            // column blocks of each GEMM (kernels/cpu/internal/blas_gemm.hpp)
  LinearStageTimes* times = nullptr;  // optional: add each stage's wall time here
};

void cast(ThreadPool& pool, Tensor dst, Tensor src);
void fill(ThreadPool& pool, Tensor dst, double value);
void add(ThreadPool& pool, Tensor out, Tensor a, Tensor b);

void embedding_forward(ThreadPool& pool, Tensor out, Tensor tokens, Tensor table);
void embedding_backward(ThreadPool& pool, Tensor dtable, Tensor tokens, Tensor dout);

void rmsnorm_forward(ThreadPool& pool, Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps);
void rmsnorm_backward(ThreadPool& pool, Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                      Tensor rstd);

void linear_forward(const LinearContext& ctx, Tensor out, Tensor x, Tensor w);
void linear_backward(const LinearContext& ctx, Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w,
                     bool accumulate_dx);

void rope_forward(ThreadPool& pool, Tensor out, Tensor x, float theta);
void rope_backward(ThreadPool& pool, Tensor dx, Tensor dout, float theta);

void attention_forward(ThreadPool& pool, Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v);
void attention_backward(ThreadPool& pool, Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k,
                        Tensor v, Tensor out, Tensor lse);

void swiglu_forward(ThreadPool& pool, Tensor out, Tensor gate, Tensor up);
void swiglu_backward(ThreadPool& pool, Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up);

void cross_entropy_forward(ThreadPool& pool, Tensor losses, Tensor logits, Tensor targets);
void cross_entropy_backward(ThreadPool& pool, Tensor dlogits, Tensor logits, Tensor targets, float scale);

}  // namespace mlpo::cpu
