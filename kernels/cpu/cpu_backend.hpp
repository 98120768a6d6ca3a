#pragma once
// CpuBackend: the reference implementation of Backend (kernels/backend.hpp) on host memory.
// Every op is a plain loop, threaded over rows with the ThreadPool passed in; GEMMs go to
// OpenBLAS (or to the reference loops, for testing the fast path against them).
//
// Determinism: each output element is computed by one thread with a fixed summation order,
// so results are bitwise identical for any ThreadPool size. GEMMs (linear layers, attention) are
// single-threaded OpenBLAS calls run on the ThreadPool; a linear layer's GEMM is cut into
// `blas_threads` column blocks (kernels/cpu/internal/blas_gemm.hpp), a function of the shapes and that
// count only, so for a fixed count results are reproducible run to run. OpenBLAS's own thread
// count is set to 1 (process-wide) at construction: its threads would otherwise spin on the
// cores the ThreadPool's ops need.
//
// Memory: allocate() returns 64-byte aligned host memory owned by the returned DeviceBuffer.
// Not thread-safe: one thread drives a backend at a time (it keeps GEMM staging buffers).

#include "core/thread_pool.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/internal/ops.hpp"

namespace mlpo {

struct CpuBackendOptions {
  // Column blocks each linear-layer GEMM is cut into, run on the ThreadPool (so at most the
  // pool's size run at once); 0 means usable_cores() (core/usable_cores.hpp). Independent of the
  // ThreadPool so that changing the pool never changes a GEMM result.
  unsigned blas_threads = 0;
  // blas (OpenBLAS sgemm/dgemm) or reference (plain loops; slow, for tests).
  cpu::GemmPath gemm = cpu::GemmPath::blas;
  // Benchmarks: when set, the linear layers add their stages' wall times here.
  cpu::LinearStageTimes* linear_times = nullptr;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(ThreadPool& pool, CpuBackendOptions options = {});

  std::string name() const override { return "cpu"; }
  ThreadPool& pool() const { return pool_; }
  unsigned blas_threads() const { return blas_threads_; }

  DeviceBuffer allocate(std::size_t bytes) override;
  using Backend::allocate;
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
  cpu::LinearContext linear_context() {
    return {pool_, scratch_, options_.gemm, blas_threads_, options_.linear_times};
  }

  ThreadPool& pool_;
  CpuBackendOptions options_;
  unsigned blas_threads_;
  cpu::GemmScratch scratch_;
};

}  // namespace mlpo
