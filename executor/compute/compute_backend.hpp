#pragma once
// The compute device of a training run, chosen by `mlpo-run --backend`, and the up-front
// check that the run fits in its memory.
//
//   cpu       CpuBackend (kernels/cpu): host memory, the ThreadPool and OpenBLAS
//   cuda      CudaBackend (kernels/cuda) on the process's GPU: device 0 for one process, the
//             local rank's (modulo the GPUs it sees) under a launcher
//   cuda:N    CudaBackend on device N
//
// A build without nvcc has no CUDA backend; asking for it, or for a GPU on a machine without
// a usable one, is an mlpo::Error naming the reason (CUDA's own text: "CUDA driver version is
// insufficient for CUDA runtime version", no device, device N out of range). Never a silent
// fall-back to the CPU.
//
// The memory check: training_device_memory() counts every buffer a training step allocates
// on the device — the model (weights: all, or the streaming provider's slots; gradients: all,
// or the streamed part buffers; activations), the gradient hand-over's staging, the micro-
// batch partial sums and the backend's own workspace — before any of it exists, so a run that
// does not fit fails at start with the numbers, not with an out-of-memory error mid-step.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/thread_pool.hpp"
#include "executor/model/device_memory.hpp"
#include "executor/model/model_shape.hpp"
#include "core/attention_blocking.hpp"
#include "kernels/attention_path.hpp"
#include "kernels/backend.hpp"

namespace mlpo::compute {

struct BackendChoice {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int device = -1;                                  // cuda: -1 = the local rank's GPU
  AttentionPath attention = kDefaultAttentionPath;  // cuda: which attention kernels (--attention)
  std::string describe() const;                     // "cpu", "cuda", "cuda:1"
};

// "cpu", "cuda" or "cuda:N"; anything else is an mlpo::Error naming `option`.
BackendChoice parse_backend(const std::string& text, const std::string& option);

// Whether this build has the CUDA backend (nvcc was found at configure time).
bool have_cuda_backend();

struct DeviceMemoryInfo {
  std::size_t free = 0, total = 0;
};

// An opened compute backend, with what the memory check needs to know about it.
struct ComputeBackend {
  std::unique_ptr<Backend> backend;
  std::optional<DeviceMemoryInfo> memory;           // GPU memory now; none for the CPU (host memory)
  std::string description;                          // "cpu" or "cuda:0 (NVIDIA H200)"
  AttentionPath attention = kDefaultAttentionPath;  // the GPU's attention path
  // The backend's own device memory (workspace, op scratch) for a model of `hidden` channels
  // whose attention has the dims `attention`; 0 on the CPU.
  std::int64_t scratch_bound(std::int64_t hidden, const AttentionDims& attention) const;
};

// Throws mlpo::Error when the choice cannot be served (no CUDA in this build, no usable GPU,
// no device N). `local_rank` picks the GPU for a plain "cuda".
ComputeBackend open_backend(const BackendChoice& choice, ThreadPool& threads, unsigned blas_threads,
                            int local_rank);

struct TrainingFootprint {
  int micro_batch = 1;
  int grad_accum = 1;
  int ranks = 1;
  bool param_offload = false;
};

// How the trainer runs the model for a footprint (one place, used by the trainer and the
// memory check alike): weight slots of the provider (0: resident) and whether gradients are
// streamed part by part (no micro-batch sum to keep: grad_accum 1, and parameter offload or
// ZeRO-3 ranks, whose gradient leaves the device range by range anyway).
int weight_slots(const TrainingFootprint& f);
bool streams_gradients(const TrainingFootprint& f);

model::DeviceMemoryNeed training_device_memory(const model::ModelShape& shape, const TrainingFootprint& f,
                                               std::int64_t backend_bytes);

// Throws mlpo::Error when `need` exceeds `available` (the device's free memory, or less under
// a --gpu-memory-limit), naming bytes needed and free and the fix: --param-offload when it is
// not on (and what it would need), else a smaller --micro-batch or --seq-len.
// `with_offload`: the need of the same run with --param-offload, when it is off (null when on).
// `limit_note` follows "N available" in the message (e.g. " under --gpu-memory-limit").
void require_training_memory(const model::DeviceMemoryNeed& need, const TrainingFootprint& f,
                             const model::DeviceMemoryNeed* with_offload, std::size_t available,
                             std::size_t total, const std::string& device, const std::string& limit_note);

// The up-front check of a run of `shape` and `footprint` on `device`, as train() makes it: the
// need (with the backend's scratch) against the device's free memory, or `memory_limit` bytes
// when that is less (0: no limit); throws as require_training_memory, offering --param-offload
// to a single process without it. Returns the line train() notes ("device: cuda:0 (...); the
// run needs ... of ... available"); none on the CPU, whose memory is the host's.
std::optional<std::string> check_training_memory(const ComputeBackend& device, const model::ModelShape& shape,
                                                 const TrainingFootprint& footprint,
                                                 std::uint64_t memory_limit);

}  // namespace mlpo::compute
