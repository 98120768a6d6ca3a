#include "kernels/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "core/units.hpp"
#include "core/usable_cores.hpp"

namespace mlpo {

CpuBackend::CpuBackend(ThreadPool& pool, CpuBackendOptions options)
    : pool_(pool),
      options_(options),
      blas_threads_(options.blas_threads ? options.blas_threads : usable_cores()) {
  // All parallelism is the ThreadPool's: GEMMs are single-threaded OpenBLAS calls on its threads
  // (kernels/cpu/internal/blas_gemm.hpp), so OpenBLAS's own threads never compete with it for cores.
  openblas_set_num_threads(1);
}

DeviceBuffer CpuBackend::allocate(std::size_t bytes) {
  const std::size_t size = round_up(std::max<std::size_t>(bytes, 1), 64);
  void* p = std::aligned_alloc(64, size);
  if (!p)
    throw Error("out of host memory allocating " + format_bytes(static_cast<double>(size)) +
                " for the CPU backend");
  return DeviceBuffer(p, bytes, &std::free);
}

void CpuBackend::copy_from_host(Tensor dst, const void* src) { std::memcpy(dst.data, src, dst.bytes()); }
void CpuBackend::copy_to_host(void* dst, Tensor src) { std::memcpy(dst, src.data, src.bytes()); }
void CpuBackend::copy(Tensor dst, Tensor src) {
  MLPO_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(),
             "copy: " + dst.describe() + " <- " + src.describe());
  std::memmove(dst.data, src.data, src.bytes());
}
void CpuBackend::fill(Tensor dst, double value) { cpu::fill(pool_, dst, value); }
void CpuBackend::cast(Tensor dst, Tensor src) { cpu::cast(pool_, dst, src); }
void CpuBackend::add(Tensor out, Tensor a, Tensor b) { cpu::add(pool_, out, a, b); }

void CpuBackend::embedding_forward(Tensor out, Tensor tokens, Tensor table) {
  cpu::embedding_forward(pool_, out, tokens, table);
}
void CpuBackend::embedding_backward(Tensor dtable, Tensor tokens, Tensor dout) {
  cpu::embedding_backward(pool_, dtable, tokens, dout);
}
void CpuBackend::rmsnorm_forward(Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) {
  cpu::rmsnorm_forward(pool_, out, rstd, x, weight, eps);
}
void CpuBackend::rmsnorm_backward(Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                                  Tensor rstd) {
  cpu::rmsnorm_backward(pool_, dx, dweight, dout, x, weight, rstd);
}
void CpuBackend::linear_forward(Tensor out, Tensor x, Tensor w) {
  cpu::linear_forward(linear_context(), out, x, w);
}
void CpuBackend::linear_backward(Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w, bool accumulate_dx) {
  cpu::linear_backward(linear_context(), dx, dw, dout, x, w, accumulate_dx);
}
void CpuBackend::rope_forward(Tensor out, Tensor x, float theta) { cpu::rope_forward(pool_, out, x, theta); }
void CpuBackend::rope_backward(Tensor dx, Tensor dout, float theta) {
  cpu::rope_backward(pool_, dx, dout, theta);
}
void CpuBackend::attention_forward(Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) {
  cpu::attention_forward(pool_, out, lse, q, k, v);
}
void CpuBackend::attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k,
                                    Tensor v, Tensor out, Tensor lse) {
  cpu::attention_backward(pool_, dq, dk, dv, dout, q, k, v, out, lse);
}
void CpuBackend::swiglu_forward(Tensor out, Tensor gate, Tensor up) {
  cpu::swiglu_forward(pool_, out, gate, up);
}
void CpuBackend::swiglu_backward(Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) {
  cpu::swiglu_backward(pool_, dgate, dup, dout, gate, up);
}
void CpuBackend::cross_entropy_forward(Tensor losses, Tensor logits, Tensor targets) {
  cpu::cross_entropy_forward(pool_, losses, logits, targets);
}
void CpuBackend::cross_entropy_backward(Tensor dlogits, Tensor logits, Tensor targets, float scale) {
  cpu::cross_entropy_backward(pool_, dlogits, logits, targets, scale);
}

}  // namespace mlpo
