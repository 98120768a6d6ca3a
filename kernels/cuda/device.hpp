#pragma once
// CUDA runtime essentials shared by the CUDA backend (cuda_backend.hpp) and the layer streamer
// (cuda_copy_queue.hpp): whether a device is usable, the error type and checks, and RAII owners
// of streams, events, pinned host memory and grow-only device scratch.
//
// "No device" is any error from cudaGetDeviceCount (a machine with the toolkit but no driver
// answers "CUDA driver version is insufficient for CUDA runtime version"), or a count of zero.
// Callers skip or fall back with the reason; they never treat it as a crash.
//
// Failures of CUDA, cuBLASLt or NCCL calls throw gpu::GpuError, which names the library, the
// call or kernel and the shapes it ran on. Kernels run asynchronously, so a fault inside one
// (an illegal address) is reported by a later call of the same stream; the message says so and
// how to pin it down: CUDA_LAUNCH_BLOCKING=1 (every launch waits), or MLPO_CUDA_SYNC_CHECK=1
// (each op synchronises its stream after its launches and names itself).

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace mlpo {

struct CudaAvailability {
  bool available = false;
  std::string reason;  // why not, when !available; "<n> device(s), 0: <name>" otherwise
};

// Never throws and never aborts: safe to call on any machine.
CudaAvailability cuda_available();

namespace gpu {

// A failed call of the CUDA runtime, cuBLASLt or NCCL: not a user's mistake (those are
// mlpo::Error), so the CLIs report it as an internal error (exit 1). `sticky()` is true for
// errors that leave the CUDA context unusable (an illegal address, a kernel assertion): every
// later CUDA call of the process fails too.
class GpuError : public std::runtime_error {
 public:
  GpuError(std::string library, int code, bool sticky, const std::string& message)
      : std::runtime_error(message), library_(std::move(library)), code_(code), sticky_(sticky) {}
  const std::string& library() const { return library_; }  // "CUDA", "cuBLASLt", "NCCL"
  int code() const { return code_; }                       // the library's status value
  bool sticky() const { return sticky_; }

 private:
  std::string library_;
  int code_;
  bool sticky_;
};

// Throws GpuError naming the failed call `what` (and, for launches, the op and its shapes)
// when `status` is an error. Out-of-memory from an allocation goes through check_allocation.
void check(cudaError_t status, const char* what);
void check(cudaError_t status, const std::string& what);

// Whether MLPO_CUDA_SYNC_CHECK=1 is set: then every op synchronises its stream after its
// launches (check_launch in cuda_common.cuh), so a kernel's fault is reported by the op that
// launched it, with its shapes (slow; for finding a fault).
bool sync_check_enabled();

// Throws mlpo::Error naming the request, the device's free and total memory and the fixes,
// for cudaErrorMemoryAllocation; other errors go to check().
void check_allocation(cudaError_t status, std::size_t bytes, const char* what);

struct DeviceMemory {
  std::size_t free = 0, total = 0;
};
DeviceMemory device_memory();  // of the current device

// A non-blocking stream (does not serialise with the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing (cheapest kind), for ordering work across streams.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);
  // Makes `stream` wait for the work recorded so far, without blocking the host.
  void wait_on(cudaStream_t stream) const;
  void synchronize() const;  // blocks the host

 private:
  cudaEvent_t event_ = nullptr;
};

// Page-locked host memory (cudaMallocHost): the only kind a copy engine can move
// asynchronously. Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Grow-only device memory for an op's temporary results (column partial sums, the attention
// backward's row dot products, the token-range flag, the GEMM attention's operands and scores,
// the embedding backward's sorted ids), one region per slot. Growing waits for
// `stream` first, so memory still read by queued kernels is never freed under them.
class DeviceScratch {
 public:
  enum Slot { partials = 0, rows = 1, flag = 2, attention = 3, ids = 4, kSlots = 5 };
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get(Slot slot, std::size_t bytes, cudaStream_t stream);

 private:
  void* data_[kSlots] = {};
  std::size_t bytes_[kSlots] = {};
};

}  // namespace gpu
}  // namespace mlpo
