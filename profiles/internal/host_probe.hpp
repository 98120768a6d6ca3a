#pragma once
// Host probe: what the CPU side of the update phase can do on this machine.
//   - facts: logical CPUs, total/available memory (/proc/meminfo), NUMA nodes (sysfs);
//   - memcpy GB/s (bytes copied / s) with one thread and with every core, over buffers of
//     `memcpy_bytes` (far beyond the caches);
//   - the executor's own fused AdamW (kernels/cpu/adamw.hpp, bf16 gradient in, fp32 p/m/v,
//     bf16 copy of p out, best SIMD variant) in elements/s at each thread count, over
//     `adam_state_bytes` of p/m/v state (12 B/element) — the real kernel, so adam_estimated
//     is false;
//   - bf16 <-> fp32 conversion (kernels/cpu/convert.hpp) with every core, GB/s of the fp32 side;
//   - the CPU backend's bf16 GEMM (OpenBLAS via CpuBackend::linear_forward, including its
//     bf16 staging) in GFLOP/s, aggregated over the model's layer shapes (gemm_shapes.hpp),
//     so the tuner can plan CPU-only runs.
// Every figure is `repetitions` timed runs after one untimed warm-up. Memory used at once:
// about adam_state_bytes * 4/3 (state + gradient + bf16 copy) or 2 * memcpy_bytes, whichever
// is larger, plus the GEMM operands.

#include <cstdint>
#include <vector>

#include "core/model_spec.hpp"
#include "core/profile.hpp"
#include "core/diagnostics.hpp"

namespace mlpo::profiles {

struct HostProbeOptions {
  std::uint64_t memcpy_bytes = std::uint64_t{1} << 30;
  std::uint64_t adam_state_bytes = std::uint64_t{1} << 30;  // p, m, v together
  std::vector<unsigned> adam_threads;                       // empty: 1 .. cores
  int repetitions = 5;
  bool cpu_gemm = true;
  ModelSpec gemm_model;  // shapes of the CPU GEMM figure and of the model probe
  std::int64_t gemm_tokens = 512;
  // The model probe (host.cpu_model, profiles/internal/compute_probe.hpp): the executor's own
  // forward and backward of gemm_model's widths at this micro-batch and sequence length.
  bool cpu_model = true;
  std::int64_t model_micro_batch = 1;
  std::int64_t model_seq_len = 512;
  int model_repetitions = 2;
};

// Cores, memory and NUMA only (no timing): cheap, used to size the other probes.
HostProfile read_host_facts();

HostProfile probe_host(const HostProbeOptions& options, const Diagnostics& diagnostics);

}  // namespace mlpo::profiles
