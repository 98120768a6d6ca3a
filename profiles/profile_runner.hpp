#pragma once
// The whole of `mlpo-profile` as one call: validate the request (every tier path, free
// space, tier names, the model) before anything is measured, then run the host, GPU and tier
// probes in turn and return the Profile. --quick and the default differ only in sizes and
// repetitions (ProfileSizes); every size can be overridden.
//
//   PreparedProfile prepared = prepare_profile(request);   // throws mlpo::Error, creates nothing
//   Profile profile = run_profile(prepared, probe_gpus, diagnostics);
//
// Without a device (or a CUDA build) `gpus` is empty with the reason, and the CPU backend's
// GEMM figure is always measured. Interruptions surface as Interrupted (core/interrupt.hpp) once
// every probe file is gone.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/profile.hpp"
#include "executor/io/tier.hpp"
#include "profiles/internal/comm_probe.hpp"
#include "profiles/gpu_probe.hpp"
#include "profiles/internal/host_probe.hpp"
#include "core/diagnostics.hpp"
#include "profiles/internal/tier_probe.hpp"

namespace mlpo::profiles {

struct ProfileRequest {
  std::vector<TierSpec> tiers;  // at least one
  bool quick = false;
  std::string model = "llama2-7b";  // preset or mlpo.model/1 file: GEMM shapes
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 0;  // 0: the model's
  // Overrides; 0 keeps the mode's default.
  std::uint64_t tier_bytes_per_stream = 0;
  unsigned max_streams = 0;
  std::uint64_t block_size = static_cast<std::uint64_t>(kDefaultIoBlockSize);
  unsigned queue_depth = static_cast<unsigned>(kDefaultIoQueueDepth);
  std::vector<IoSetting> io_settings;  // more tier curves at these (--io-settings)
  std::uint64_t host_bytes = 0;        // Adam state and memcpy buffer size
  int repetitions = 0;
  std::string notes;
  // --comm: also measure the host MPI collectives (comm_probe.hpp) under mpirun.
  bool comm = false;
  CommProbeOptions comm_options;
  // --comm-between-nodes LAUNCHER: also comm.inter_node, one rank per node through the launcher
  // (inter_node_options.launcher non-empty; its ranks = the nodes to span).
  CommProbeOptions inter_node_options;
};

struct PreparedProfile {
  ProfileRequest request;
  std::vector<TierProbePlan> tiers;  // one per request tier, sized to its free space
  TierProbeOptions tier_options;
  HostProbeOptions host_options;
  GpuProbeOptions gpu_options;
};

// Throws mlpo::Error (one line, naming the input and the fix) for: no tier, fewer than 2
// --comm-ranks, duplicate tier
// names, a missing / non-directory / unwritable path, too little free space, an unknown
// model, bad sizes. Creates and writes nothing.
PreparedProfile prepare_profile(const ProfileRequest& request);

// `gpus` is probe_gpus (gpu_probe.hpp, library mlpo_profiles_gpu) in mlpo-profile.
Profile run_profile(const PreparedProfile& prepared, const GpuProber& gpus, const Diagnostics& diagnostics);

}  // namespace mlpo::profiles
