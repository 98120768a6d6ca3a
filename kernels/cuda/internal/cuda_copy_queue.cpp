#include "kernels/cuda/internal/cuda_copy_queue.hpp"

namespace mlpo {

CudaCopyQueue::~CudaCopyQueue() { cudaStreamSynchronize(stream_.get()); }

void CudaCopyQueue::after_compute() {
  compute_mark_.record(compute_);
  compute_mark_.wait_on(stream_.get());
}

void CudaCopyQueue::to_device(Tensor dst, const void* src) {
  if (ids_) ids_->forget(dst.data, dst.bytes());
  after_compute();
  gpu::check(cudaMemcpyAsync(dst.data, src, dst.bytes(), cudaMemcpyHostToDevice, stream_.get()),
             "asynchronous copy host to device");
}

void CudaCopyQueue::to_host(void* dst, Tensor src) {
  after_compute();
  gpu::check(cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, stream_.get()),
             "asynchronous copy device to host");
}

void CudaCopyQueue::order_compute_after_copies() {
  copies_mark_.record(stream_.get());
  copies_mark_.wait_on(compute_);
}

void CudaCopyQueue::wait() { stream_.synchronize(); }

}  // namespace mlpo
