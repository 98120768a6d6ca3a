#include "kernels/cuda/cuda_backend.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cuda/internal/cuda_copy_queue.hpp"
#include "kernels/cuda/ops.hpp"

namespace mlpo {

namespace {

// Selects the device before any member (stream, cuBLASLt handle) is created on it.
int select_device(int device) {
  const CudaAvailability status = cuda_available();
  if (!status.available) throw Error("cannot use the CUDA backend: " + status.reason);
  int count = 0;
  gpu::check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    throw Error("CUDA device " + std::to_string(device) + " does not exist; this machine has " +
                std::to_string(count));
  gpu::check(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

void free_device(void* p) { cudaFree(p); }
void free_pinned(void* p) { cudaFreeHost(p); }

}  // namespace

CudaBackend::CudaBackend(int device, CudaBackendOptions options)
    : device_(select_device(device)), options_(options), gemm_(std::make_unique<gpu::Gemm>()) {}

std::size_t CudaBackend::scratch_bound(std::int64_t hidden, const AttentionDims& attention,
                                       AttentionPath path) {
  const std::size_t rounding = std::size_t{1} << 16;  // DeviceScratch rounds every slot up to this
  const std::int64_t attention_rows = attention.B * attention.Hq * attention.T;
  const std::size_t attention_bytes = path == AttentionPath::gemm
                                          ? attention_workspace_bytes(attention, sizeof(bf16))
                                          : static_cast<std::size_t>(attention_rows) * sizeof(float);
  return gpu::kGemmWorkspaceBytes +
         static_cast<std::size_t>(gpu::kMaxReductionChunks * hidden) * sizeof(float) + attention_bytes +
         gpu::embedding_scratch_bytes(attention.B * attention.T) + gpu::DeviceScratch::kSlots * rounding;
}

CudaBackend::~CudaBackend() { cudaStreamSynchronize(stream_.get()); }

DeviceBuffer CudaBackend::allocate(std::size_t bytes) {
  void* p = nullptr;
  gpu::check_allocation(cudaMalloc(&p, bytes ? bytes : 1), bytes, "a CUDA backend buffer");
  ids_.forget(p, bytes);  // an address freed and handed out again holds nothing uploaded
  return DeviceBuffer(p, bytes, &free_device);
}

HostBuffer CudaBackend::allocate_host(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMallocHost(&p, bytes ? bytes : 1);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error("out of pinned host memory allocating " + format_bytes(static_cast<double>(bytes)) + " for " +
                name() +
                "'s transfers; free host memory (a smaller host cache or memory tier) or raise "
                "the locked-memory limit (ulimit -l)");
  }
  gpu::check(status, "cudaMallocHost");
  return HostBuffer(p, bytes, &free_pinned);
}

std::unique_ptr<CopyQueue> CudaBackend::make_copy_queue() {
  return std::make_unique<CudaCopyQueue>(stream_.get(), &ids_);
}

void CudaBackend::copy_from_host(Tensor dst, const void* src) {
  gpu::check(cudaMemcpyAsync(dst.data, src, dst.bytes(), cudaMemcpyHostToDevice, stream_.get()),
             "copy_from_host");
  stream_.synchronize();
  if (dst.dtype == DType::i32)
    ids_.record(dst.data, dst.numel(), static_cast<const std::int32_t*>(src));
  else
    ids_.forget(dst.data, dst.bytes());
}

void CudaBackend::copy_to_host(void* dst, Tensor src) {
  gpu::check(cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, stream_.get()),
             "copy_to_host");
  stream_.synchronize();
}

void CudaBackend::copy(Tensor dst, Tensor src) {
  MLPO_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(),
             "copy: " + dst.describe() + " <- " + src.describe());
  ids_.forget(dst.data, dst.bytes());
  gpu::check(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDeviceToDevice, stream_.get()),
             "copy");
}

void CudaBackend::fill(Tensor dst, double value) {
  ids_.forget(dst.data, dst.bytes());
  gpu::fill(context(), dst, value);
}
void CudaBackend::cast(Tensor dst, Tensor src) {
  ids_.forget(dst.data, dst.bytes());
  gpu::cast(context(), dst, src);
}
void CudaBackend::add(Tensor out, Tensor a, Tensor b) { gpu::add(context(), out, a, b); }

void CudaBackend::embedding_forward(Tensor out, Tensor tokens, Tensor table) {
  gpu::embedding_forward(context(), out, tokens, table);
}
void CudaBackend::embedding_backward(Tensor dtable, Tensor tokens, Tensor dout) {
  gpu::embedding_backward(context(), dtable, tokens, dout);
}
void CudaBackend::rmsnorm_forward(Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) {
  gpu::rmsnorm_forward(context(), out, rstd, x, weight, eps);
}
void CudaBackend::rmsnorm_backward(Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                                   Tensor rstd) {
  gpu::rmsnorm_backward(context(), dx, dweight, dout, x, weight, rstd);
}
void CudaBackend::linear_forward(Tensor out, Tensor x, Tensor w) {
  gpu::linear_forward(context(), *gemm_, out, x, w);
}
void CudaBackend::linear_backward(Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w, bool accumulate_dx) {
  gpu::linear_backward(context(), *gemm_, dx, dw, dout, x, w, accumulate_dx);
}
void CudaBackend::rope_forward(Tensor out, Tensor x, float theta) {
  gpu::rope_forward(context(), out, x, theta);
}
void CudaBackend::rope_backward(Tensor dx, Tensor dout, float theta) {
  gpu::rope_backward(context(), dx, dout, theta);
}
void CudaBackend::attention_forward(Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) {
  if (options_.attention == AttentionPath::gemm)
    gpu::attention_forward_gemm(context(), *gemm_, out, lse, q, k, v);
  else
    gpu::attention_forward(context(), out, lse, q, k, v);
}
void CudaBackend::attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k,
                                     Tensor v, Tensor out, Tensor lse) {
  if (options_.attention == AttentionPath::gemm)
    gpu::attention_backward_gemm(context(), *gemm_, dq, dk, dv, dout, q, k, v, out, lse);
  else
    gpu::attention_backward(context(), dq, dk, dv, dout, q, k, v, out, lse);
}
void CudaBackend::swiglu_forward(Tensor out, Tensor gate, Tensor up) {
  gpu::swiglu_forward(context(), out, gate, up);
}
void CudaBackend::swiglu_backward(Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) {
  gpu::swiglu_backward(context(), dgate, dup, dout, gate, up);
}
void CudaBackend::cross_entropy_forward(Tensor losses, Tensor logits, Tensor targets) {
  gpu::cross_entropy_forward(context(), losses, logits, targets);
}
void CudaBackend::cross_entropy_backward(Tensor dlogits, Tensor logits, Tensor targets, float scale) {
  gpu::cross_entropy_backward(context(), dlogits, logits, targets, scale);
}

}  // namespace mlpo
