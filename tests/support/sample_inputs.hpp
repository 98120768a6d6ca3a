#pragma once
// Small, fast inputs for simulator and tuner tests: a profile built in code (host memory,
// NVMe and remote tiers with flat or falling concurrency curves) and a plan skeleton.

#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/profile.hpp"

namespace mlpo::testing {

inline CurvePoint point(std::int64_t streams, double v) {
  CurvePoint p;
  p.streams = streams;
  p.value.median = p.value.min = p.value.max = v;
  return p;
}

inline TierProfile tier(const std::string& name, TierKind kind, double read_gbps, double write_gbps,
                        std::int64_t free_bytes = std::int64_t{1} << 44) {
  TierProfile t;
  t.name = name;
  t.kind = kind;
  t.path = "/tmp/" + name;
  t.capacity_bytes = t.free_bytes = free_bytes;
  t.read_gbps = {point(1, read_gbps)};
  t.write_gbps = {point(1, write_gbps)};
  return t;
}

// A 16-core node without GPUs and fast CPU Adam, so updates are I/O bound unless stated.
inline Profile io_bound_profile() {
  Profile p;
  p.hostname = "test";
  p.host.cores = 16;
  p.host.memory_bytes = p.host.available_bytes = std::int64_t{256} << 30;
  p.host.memcpy_gbps.median = 10;
  p.host.memcpy_gbps_single.median = 5;
  p.host.adam_elements_per_s = {point(1, 1e9), point(16, 1e10)};
  p.tiers.push_back(tier("shm", TierKind::host, 8, 8));
  p.tiers.push_back(tier("nvme", TierKind::nvme, 2, 2));
  p.tiers.push_back(tier("pfs", TierKind::remote, 1, 1));
  return p;
}

// The io-bound profile with the CPU backend's figures of `small` at micro-batch 1 x seq 64:
// `gflops` for every part and pass.
inline Profile cpu_model_profile(double gflops = 20) {
  Profile p = io_bound_profile();
  ModelComputeFigures& m = p.host.cpu_model;
  m.model = "small";
  m.micro_batch = 1;
  m.seq_len = 64;
  m.layer_forward_gflops.median = m.layer_backward_gflops.median = gflops;
  m.head_forward_gflops.median = m.head_backward_gflops.median = gflops;
  return p;
}

// Host MPI figures on `p`: both collectives at `gbps` bus, `latency_us` each.
inline Profile with_host_mpi(Profile p, double gbps, double latency_us = 50) {
  p.comm.host_mpi.measured = true;
  p.comm.host_mpi.all_gather_gbps.median = p.comm.host_mpi.reduce_scatter_gbps.median = gbps;
  p.comm.host_mpi.latency_us.median = latency_us;
  return p;
}

inline GpuProfile gpu(std::int64_t count) {
  GpuProfile g;
  g.model = "test-gpu";
  g.count = count;
  g.memory_bytes = std::int64_t{80} << 30;
  g.bf16_tflops.median = 400;
  g.hbm_gbps.median = 2000;
  g.h2d_gbps.median = g.d2h_gbps.median = 25;
  g.bidirectional_gbps.median = 40;
  return g;
}

inline PlanTier plan_tier(const Profile& profile, const std::string& name, double fraction,
                          std::int64_t limit = 0) {
  const TierProfile* t = profile.find_tier(name);
  return PlanTier{t->name, t->path, t->kind, fraction, limit};
}

// A plan for `model_params` parameters on `nodes` x `ranks` with the given tiers.
inline Plan plan_for(const std::string& model, std::int64_t model_params, std::int64_t nodes,
                     std::int64_t ranks, std::vector<PlanTier> tiers) {
  Plan p;
  p.model_name = model;
  p.model_params = model_params;
  p.cluster.nodes = nodes;
  p.cluster.ranks_per_node = ranks;
  p.tiers = std::move(tiers);
  p.subgroup_elements = std::int64_t{1} << 22;
  p.buffers = 4;
  p.prefetch_depth = 2;
  p.order = OrderPolicy::alternating;
  return p;
}

inline Plan baseline_of(Plan p, const PlanTier& tier) {
  p.mode = PlanMode::baseline;
  p.tiers = {tier};
  p.tiers[0].fraction = 1;
  p.tiers[0].concurrency_limit = 0;
  p.gradients = GradientPolicy::flush_fp32;
  p.order = OrderPolicy::ascending;
  p.host_cache_subgroups = 0;
  p.prefetch_depth = 1;
  return p;
}

}  // namespace mlpo::testing
