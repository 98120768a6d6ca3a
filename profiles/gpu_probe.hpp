#pragma once
// GPU probe (built only when CUDA is found at configure time; elsewhere probe_gpus() reports
// why there are no GPUs). For each GPU model present it measures its first device alone:
//   - bf16 GEMM TFLOP/s with cuBLASLt (bf16 A/B/C, fp32 accumulation, CUBLAS_COMPUTE_32F,
//     the heuristic's best algorithm) at the model's layer shapes (gemm_shapes.hpp) with
//     m = micro-batch x sequence tokens; bf16_tflops aggregates them over one layer;
//   - HBM GB/s: device-to-device cudaMemcpyAsync, bytes read + written per second;
//   - pinned (cudaHostAlloc) H2D and D2H GB/s, and both at once on two streams (sum of both);
// and, when there is more than one device of the model, the same GEMM and H2D/D2H figures
// with all of them driven at once (all_* fields, aggregates). Timing uses CUDA events on the
// stream (host wall clock for the multi-stream and multi-device figures), after warm-up.
// Any CUDA error at discovery (no driver, driver too old for the runtime, no device) is "no
// GPU": an empty list and the error text as the reason.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/profile.hpp"
#include "core/diagnostics.hpp"

namespace mlpo::profiles {

struct GpuProbeOptions {
  ModelSpec model;                                        // GEMM shapes
  std::int64_t tokens = 4096;                             // micro-batch x sequence length
  std::uint64_t transfer_bytes = std::uint64_t{1} << 30;  // per copy (HBM, H2D, D2H)
  int repetitions = 5;
};

struct GpuProbeResult {
  std::vector<GpuProfile> gpus;
  std::string reason;  // why `gpus` is empty
};

// Lives in its own library (mlpo_profiles_gpu) so that only programs that probe GPUs load the
// CUDA runtime and the ~0.5 GB cuBLASLt; run_profile() takes it as a GpuProber.
GpuProbeResult probe_gpus(const GpuProbeOptions& options, const Diagnostics& diagnostics);

using GpuProber = std::function<GpuProbeResult(const GpuProbeOptions&, const Diagnostics&)>;

}  // namespace mlpo::profiles
