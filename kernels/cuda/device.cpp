#include "kernels/cuda/device.hpp"

#include <cstdlib>
#include <utility>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo {

CudaAvailability cuda_available() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return {false, std::string("no usable CUDA device: ") + cudaGetErrorString(status)};
  }
  if (count == 0) return {false, "no usable CUDA device: cudaGetDeviceCount found 0 devices"};
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    return {false, "no usable CUDA device: cannot read the properties of device 0"};
  }
  return {true, std::to_string(count) + " device(s), 0: " + prop.name};
}

namespace gpu {

namespace {

// Errors after which the context is unusable: every later call returns the same error.
bool is_sticky(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorAssert:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace

void check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  const bool sticky = is_sticky(status);
  if (!sticky) cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string message =
      "CUDA error in " + what + ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")";
  if (sticky)
    message +=
        "; kernels run asynchronously, so the fault may come from earlier work on the stream: rerun with "
        "CUDA_LAUNCH_BLOCKING=1 or MLPO_CUDA_SYNC_CHECK=1 to name the kernel that caused it";
  throw GpuError("CUDA", static_cast<int>(status), sticky, message);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) check(status, std::string(what));
}

bool sync_check_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("MLPO_CUDA_SYNC_CHECK");
    return v != nullptr && std::string(v) == "1";
  }();
  return enabled;
}

DeviceMemory device_memory() {
  DeviceMemory m;
  check(cudaMemGetInfo(&m.free, &m.total), "cudaMemGetInfo");
  return m;
}

void check_allocation(cudaError_t status, std::size_t bytes, const char* what) {
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    const DeviceMemory m = device_memory();
    throw Error(std::string("out of GPU memory: ") + what + " needs " +
                format_bytes(static_cast<double>(bytes)) + ", the device has " +
                format_bytes(static_cast<double>(m.free)) + " free of " +
                format_bytes(static_cast<double>(m.total)) +
                "; use a smaller batch, fewer resident layers (parameter offload) or a larger GPU");
  }
  check(status, what);
}

Stream::Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}
void Stream::synchronize() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

Event::Event() { check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate"); }
Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}
void Event::record(cudaStream_t stream) { check(cudaEventRecord(event_, stream), "cudaEventRecord"); }
void Event::wait_on(cudaStream_t stream) const {
  check(cudaStreamWaitEvent(stream, event_, 0), "cudaStreamWaitEvent");
}
void Event::synchronize() const { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  const cudaError_t status = cudaMallocHost(&data_, bytes ? bytes : 1);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error("out of pinned host memory allocating " + format_bytes(static_cast<double>(bytes)) +
                "; lower the host cache or the number of staging buffers, or raise the locked-memory limit");
  }
  check(status, "cudaMallocHost");
}
PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceScratch::~DeviceScratch() {
  for (void* p : data_)
    if (p) cudaFree(p);
}

void* DeviceScratch::get(Slot slot, std::size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_[slot]) return data_[slot];
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (scratch grows)");
  if (data_[slot]) check(cudaFree(data_[slot]), "cudaFree (scratch)");
  data_[slot] = nullptr;
  bytes_[slot] = 0;
  const std::size_t size = round_up(bytes, std::size_t{1} << 16);
  check_allocation(cudaMalloc(&data_[slot], size), size, "the CUDA backend's scratch memory");
  bytes_[slot] = size;
  return data_[slot];
}

}  // namespace gpu
}  // namespace mlpo
