#include "executor/compute/compute_backend.hpp"

#include <algorithm>
#include <charconv>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/compute/gradient_handover.hpp"
#include "executor/compute/micro_batch_gradient_sum.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#if MLPO_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace mlpo::compute {

std::string BackendChoice::describe() const {
  if (kind == Kind::cpu) return "cpu";
  return device < 0 ? "cuda" : "cuda:" + std::to_string(device);
}

BackendChoice parse_backend(const std::string& text, const std::string& option) {
  if (text == "cpu") return {BackendChoice::Kind::cpu, -1};
  if (text == "cuda") return {BackendChoice::Kind::cuda, -1};
  if (text.rfind("cuda:", 0) == 0) {
    const std::string n = text.substr(5);
    int device = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), device);
    if (ec == std::errc() && end == n.data() + n.size() && !n.empty() && device >= 0)
      return {BackendChoice::Kind::cuda, device};
  }
  throw Error(option + ": unknown compute backend '" + text +
              "'; use cpu, cuda (this process's GPU) or cuda:N (GPU N)");
}

bool have_cuda_backend() { return MLPO_HAVE_CUDA; }

std::int64_t ComputeBackend::scratch_bound([[maybe_unused]] std::int64_t hidden,
                                           [[maybe_unused]] const AttentionDims& dims) const {
#if MLPO_HAVE_CUDA
  if (memory) return static_cast<std::int64_t>(CudaBackend::scratch_bound(hidden, dims, attention));
#endif
  return 0;
}

ComputeBackend open_backend(const BackendChoice& choice, ThreadPool& threads, unsigned blas_threads,
                            [[maybe_unused]] int local_rank) {
  ComputeBackend out;
  if (choice.kind == BackendChoice::Kind::cpu) {
    out.backend = std::make_unique<CpuBackend>(threads, CpuBackendOptions{blas_threads, cpu::GemmPath::blas});
    out.description = "cpu";
    return out;
  }
#if MLPO_HAVE_CUDA
  const CudaAvailability gpu = cuda_available();
  if (!gpu.available)
    throw Error("--backend " + choice.describe() + ": " + gpu.reason + "; train with --backend cpu here");
  int count = 0;
  gpu::check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  const int device = choice.device < 0 ? local_rank % count : choice.device;
  if (device >= count)
    throw Error("--backend " + choice.describe() + ": no such GPU; this machine has " +
                std::to_string(count) +
                (count == 1 ? " CUDA device (cuda:0)"
                            : " CUDA devices (cuda:0 .. cuda:" + std::to_string(count - 1) + ")"));
  auto backend = std::make_unique<CudaBackend>(device, CudaBackendOptions{choice.attention});
  out.attention = choice.attention;
  cudaDeviceProp prop{};
  gpu::check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const gpu::DeviceMemory m = gpu::device_memory();
  out.memory = DeviceMemoryInfo{m.free, m.total};
  out.description = backend->name() + " (" + prop.name + ")";
  out.backend = std::move(backend);
  return out;
#else
  throw Error("--backend " + choice.describe() +
              ": this build has no CUDA backend (nvcc was not found at configure time, or -DMLPO_CUDA=OFF); "
              "train with --backend cpu, or rebuild where /usr/local/cuda/bin/nvcc exists");
#endif
}

int weight_slots(const TrainingFootprint& f) { return f.param_offload ? 2 : f.ranks > 1 ? 1 : 0; }

bool streams_gradients(const TrainingFootprint& f) {
  return f.grad_accum == 1 && (f.param_offload || f.ranks > 1);
}

model::DeviceMemoryNeed training_device_memory(const model::ModelShape& shape, const TrainingFootprint& f,
                                               std::int64_t backend_bytes) {
  model::TransformerOptions options{f.micro_batch, DType::bf16, streams_gradients(f)};
  model::DeviceMemoryNeed need =
      model::model_device_memory(shape, options, backend_bytes, model::WeightResidency{weight_slots(f)});
  const model::ParameterLayout layout(shape);
  need.gradients +=
      static_cast<std::int64_t>(MicroBatchGradientSum::buffers_for(f.grad_accum)) * layout.total() * 4;
  need.activations += GradientHandover::device_bytes(layout, f.ranks);
  return need;
}

void require_training_memory(const model::DeviceMemoryNeed& need, const TrainingFootprint& f,
                             const model::DeviceMemoryNeed* with_offload, std::size_t available,
                             std::size_t total, const std::string& device, const std::string& limit_note) {
  if (need.total() <= static_cast<std::int64_t>(available)) return;
  auto bytes = [](std::int64_t n) { return format_bytes(static_cast<double>(n)); };
  std::string fix;
  if (with_offload != nullptr)
    fix = with_offload->total() <= static_cast<std::int64_t>(available)
              ? "use --param-offload (weights in host memory, streamed per layer; it needs " +
                    bytes(with_offload->total()) + ")"
              : "even --param-offload would need " + bytes(with_offload->total()) +
                    "; use a smaller --micro-batch or --seq-len";
  else
    fix = std::string("use a smaller --micro-batch or --seq-len") +
          (f.grad_accum > 1 && f.param_offload
               ? ", or --grad-accum 1 (the gradients then leave the device layer by layer)"
               : "");
  throw Error("the run needs " + need.describe() + " of memory on " + device + ", which has " +
              bytes(static_cast<std::int64_t>(available)) + " available" + limit_note + " (" +
              bytes(static_cast<std::int64_t>(total)) + " in all; short by " +
              bytes(need.total() - static_cast<std::int64_t>(available)) + "); " + fix);
}

std::optional<std::string> check_training_memory(const ComputeBackend& device, const model::ModelShape& shape,
                                                 const TrainingFootprint& footprint,
                                                 std::uint64_t memory_limit) {
  if (!device.memory) return std::nullopt;
  const std::int64_t scratch = device.scratch_bound(
      shape.hidden,
      AttentionDims{footprint.micro_batch, shape.seq_len, shape.heads, shape.kv_heads, shape.head_dim()});
  const model::DeviceMemoryNeed need = training_device_memory(shape, footprint, scratch);
  std::optional<model::DeviceMemoryNeed> offloaded;
  if (!footprint.param_offload && footprint.ranks == 1) {
    TrainingFootprint f = footprint;
    f.param_offload = true;
    offloaded = training_device_memory(shape, f, scratch);
  }
  const bool limited = memory_limit > 0 && memory_limit < device.memory->free;
  const std::size_t available = limited ? static_cast<std::size_t>(memory_limit) : device.memory->free;
  require_training_memory(need, footprint, offloaded ? &*offloaded : nullptr, available, device.memory->total,
                          device.description, limited ? " under --gpu-memory-limit" : "");
  return "device: " + device.description + "; the run needs " + need.describe() + " of " +
         format_bytes(static_cast<double>(available)) + " available" +
         (limited ? " (--gpu-memory-limit)" : "");
}

}  // namespace mlpo::compute
