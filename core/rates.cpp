#include "core/rates.hpp"

#include <algorithm>
#include <cmath>

#include "core/accounting.hpp"
#include "core/diagnostics.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo {

TierRates tier_rates_of(const TierProfile& tier) {
  TierRates t;
  t.name = tier.name;
  t.kind = tier.kind;
  t.remote = tier.kind == TierKind::remote;
  t.read_curve = tier.read_gbps;
  t.write_curve = tier.write_gbps;
  t.mixed_read_curve = tier.mixed_read_gbps;
  t.mixed_write_curve = tier.mixed_write_gbps;
  if (tier.io_ratio_adam_busy > 0 && tier.adam_ratio_io_busy > 0) {
    t.io_ratio_adam_busy = tier.io_ratio_adam_busy;
    t.adam_ratio_io_busy = tier.adam_ratio_io_busy;
  }
  t.slot_handoff_s = tier.slot_handoff_us * 1e-6;
  t.slot_handoff_waits_adam = tier.slot_handoff_waits_adam;
  return t;
}

double adam_threads_per_rank(std::int64_t cores, std::int64_t ranks_per_node) {
  return std::max(1.0, static_cast<double>(cores) / static_cast<double>(ranks_per_node));
}

double node_adam_elements_per_s(const std::vector<CurvePoint>& adam_curve, double cores, double ranks,
                                double threads_per_rank) {
  return interpolate(adam_curve, std::min(cores, ranks * threads_per_rank));
}

double tier_update_bps(const TierProfile& tier, std::int64_t ranks, std::int64_t k) {
  const TierRates rates = tier_rates_of(tier);
  if (k == 1)
    return 2.0 / (1.0 / rates.read_bps(1) + 1.0 / rates.write_bps(1));  // reads and writes take turns
  const double per_direction =
      k > 0 ? std::min(static_cast<double>(ranks), static_cast<double>(k) / 2) : static_cast<double>(ranks);
  return rates.interleaved_bps(std::max(1.0, per_direction));
}

double in_place_update_bps(const HostProfile& host, std::int64_t ranks) {
  const double eps =
      node_adam_elements_per_s(host.adam_elements_per_s, static_cast<double>(host.cores),
                               static_cast<double>(ranks), adam_threads_per_rank(host.cores, ranks));
  return eps * 2 * static_cast<double>(kOptimizerStateBytes);
}

double Rates::adam_node_eps(double ranks) const {
  return node_adam_elements_per_s(adam_curve, static_cast<double>(cores), ranks,
                                  adam_threads_per_rank(cores, ranks_per_node));
}

double Rates::adam_work(double elements) const {
  const double threads = adam_threads_per_rank(cores, ranks_per_node);
  const double used = adam_threads_used(elements, adam_grain, threads);
  if (used >= threads || adam_curve.empty()) return elements;
  const double R = static_cast<double>(ranks_per_node);
  const double fewer = node_adam_elements_per_s(adam_curve, static_cast<double>(cores), R, used);
  return fewer > 0 ? elements * adam_node_eps(R) / fewer : elements;
}

double Rates::adam_call_s(double elements) const {
  const double threads = std::floor(adam_threads_per_rank(cores, ranks_per_node));
  const double g = static_cast<double>(adam_grain);
  const double grains = std::ceil(elements / g);
  if (threads < 2 || grains < 2 || pool_dispatch_s <= 0) return 0.0;
  const double first = std::ceil(grains / threads) * g;     // the caller's range
  const double second = std::min(elements - first, first);  // the largest a worker gets
  const double R = static_cast<double>(ranks_per_node);
  const double node_eps = adam_node_eps(R);
  if (node_eps <= 0) return pool_dispatch_s;
  const double call_s = adam_work(elements) / (node_eps / R);  // as long as the caller's range
  return std::max(0.0, pool_dispatch_s - call_s * (first - second) / first);
}

namespace {

// The collectives' rates: the node's host MPI figures, capped by the inter-node ones when the
// ranks span nodes. Paths without figures are not modelled, with a warning line.
void set_collective_rates(const CommProfile& comm, Rates& r, const Diagnostics& diagnostics) {
  if (r.ranks_per_node * r.nodes <= 1) return;
  if (comm.nccl.measured)
    diagnostics.warning(
        "profile",
        "profile's comm.nccl figures are not used: mlpo-run exchanges the ZeRO-3 traffic over host MPI "
        "(comm.host_mpi)");
  if (!comm.host_mpi.measured) {
    diagnostics.warning(
        "profile",
        "profile has no comm.host_mpi figures: the ZeRO-3 all-gathers and reduce-scatters are not "
        "modelled (forward/backward predicted without them); run mlpo-profile --comm to measure them");
    return;
  }
  r.all_gather_bps = comm.host_mpi.all_gather_gbps.median * 1e9;
  r.reduce_scatter_bps = comm.host_mpi.reduce_scatter_gbps.median * 1e9;
  r.collective_latency_s = comm.host_mpi.latency_us.median * 1e-6;
  if (r.nodes <= 1) return;
  if (!comm.inter_node.measured) {
    diagnostics.warning(
        "profile",
        "profile has no comm.inter_node figures: collectives between nodes are not modelled (taken at the "
        "node's host MPI rate); measure them with mlpo-profile --comm-between-nodes LAUNCHER, or give "
        "comm.inter_node in the profile (docs/profile.md)");
    return;
  }
  r.all_gather_bps = std::min(r.all_gather_bps, comm.inter_node.all_gather_gbps.median * 1e9);
  r.reduce_scatter_bps = std::min(r.reduce_scatter_bps, comm.inter_node.reduce_scatter_gbps.median * 1e9);
  r.collective_latency_s = std::max(r.collective_latency_s, comm.inter_node.latency_us.median * 1e-6);
}

std::string io_setting_text(std::int64_t block_size, std::int64_t queue_depth) {
  return format_bytes(static_cast<double>(block_size)) + " x queue depth " + std::to_string(queue_depth);
}

// The warning for a plan whose io.block_size x io.queue_depth the profile did not measure on
// a tier it streams: the tier's main curves stand in for them.
std::string unmeasured_io_setting(const TierProfile& tier, const Plan& plan) {
  std::string measured;
  for (const IoSetting& s : tier.measured_io_settings())
    measured += (measured.empty() ? "" : ", ") + io_setting_text(s.block_size, s.queue_depth);
  return "the plan's I/O setting (" + io_setting_text(plan.io_block_size, plan.io_queue_depth) +
         ") was not measured on tier '" + tier.name + "' (measured: " + measured + "): its curves at " +
         io_setting_text(tier.block_size, tier.queue_depth) +
         " are used; measure it with mlpo-profile --io-settings " +
         std::to_string(plan.io_block_size / 1024) + "KiB:" + std::to_string(plan.io_queue_depth);
}

}  // namespace

ComputeRates cpu_model_rates(const HostProfile& host, std::int64_t ranks_per_node) {
  const ModelComputeFigures& all = host.cpu_model;
  const ModelComputeFigures& one = host.cpu_model_one_thread;
  const double R = static_cast<double>(ranks_per_node), cores = static_cast<double>(host.cores);
  // One rank's figure: the all-core one for a node of one rank; with several, each rank's
  // threads (cores / R) between the one-thread and the all-core figures, a rank on less than
  // a core getting its share of one; without a one-thread figure, the all-core rate over R.
  auto rate = [&](const Measurement& a, const Measurement& o) {
    if (R <= 1 || !one.measured() || cores <= 1) return a.median / R;
    const double threads = cores / R;
    if (threads <= 1) return o.median * threads;
    return o.median + (a.median - o.median) * (threads - 1) / (cores - 1);
  };
  return {rate(all.layer_forward_gflops, one.layer_forward_gflops) * 1e9,
          rate(all.layer_backward_gflops, one.layer_backward_gflops) * 1e9,
          rate(all.head_forward_gflops, one.head_forward_gflops) * 1e9,
          rate(all.head_backward_gflops, one.head_backward_gflops) * 1e9, true};
}

double ComputeRates::of(ComputePart part, bool backward) const {
  if (part == ComputePart::layer) return backward ? layer_backward : layer_forward;
  return backward ? head_backward : head_forward;
}

double ComputeRates::seconds(ComputePart part, bool backward, double flops) const {
  const double rate = of(part, backward);
  return rate > 0 ? flops / rate : 0.0;
}

namespace {

// The node's Adam curve, with the cost of integrity's checksums when the plan turns io.crc on.
void set_adam_rates(const HostProfile& host, const Plan& plan, Rates& r) {
  r.cores = host.cores;
  r.adam_curve = host.adam_elements_per_s;
  r.grad_norm_eps = host.grad_norm_elements_per_s.median;
  r.adam_grain = plan.crc ? kIntegrityChunkElements : kAdamWGrainElements;
  r.pool_dispatch_s = host.pool_dispatch_s.median;
  r.thread_start_s = host.thread_start_s.median;
  // Integrity on: AdamW's pass also checksums each element's p, m and v before and after
  // (docs/io.md), on the same threads: the profile's timing of that very pass when it has one,
  // else each element's time grows by 24 bytes of CRC32C at the cached CRC rate.
  if (plan.crc && !host.adam_checked_elements_per_s.empty())
    r.adam_curve = host.adam_checked_elements_per_s;
  else if (plan.crc && host.crc32c_gbps.median > 0)
    for (CurvePoint& pt : r.adam_curve) {
      const double crc_bps = host.crc32c_gbps.median * 1e9 * static_cast<double>(pt.streams);
      pt.value.median = 1.0 / (1.0 / pt.value.median + 2.0 * kOptimizerStateBytes / crc_bps);
    }
}

// Forward/backward and the PCIe copies: the GPU's figures, else the CPU backend's own model,
// else the CPU GEMM, else nothing (predicted as 0 s), each but the first with a diagnostic.
void set_compute_rates(const Profile& profile, Rates& r, const Diagnostics& diagnostics) {
  if (!profile.gpus.empty()) {
    const GpuProfile& g = profile.gpus.front();
    r.compute_on_gpu = true;
    r.compute_flops_per_rank = g.bf16_tflops.median * 1e12;
    r.h2d_bps = g.h2d_gbps.median * 1e9;
    r.d2h_bps = g.d2h_gbps.median * 1e9;
    if (g.count < r.ranks_per_node)
      diagnostics.warning("profile", "the profile's node has " + std::to_string(g.count) +
                                         " GPU(s) but the cluster shape asks for " +
                                         std::to_string(r.ranks_per_node) +
                                         " ranks per node: each rank is given one GPU like it");
  } else if (const ModelComputeFigures& m = profile.host.cpu_model; m.measured()) {
    r.compute = cpu_model_rates(profile.host, r.ranks_per_node);
    r.compute_flops_per_rank = r.compute.layer_forward;
    diagnostics.note("profile",
                     "profile has no GPU: forward/backward predicted from host.cpu_model (the CPU backend's "
                     "own forward/backward, measured on " +
                         m.model + " at micro-batch " + std::to_string(m.micro_batch) + " x seq " +
                         std::to_string(m.seq_len) + ")");
  } else if (profile.host.cpu_gemm_gflops.median > 0) {
    r.compute_flops_per_rank =
        profile.host.cpu_gemm_gflops.median * 1e9 / static_cast<double>(r.ranks_per_node);
    diagnostics.warning(
        "profile",
        "profile has no GPU and no host.cpu_model: forward/backward predicted from host.cpu_gemm_gflops "
        "(GEMM "
        "only: attention, norms and the gradient hand-over are not counted); re-run mlpo-profile to measure "
        "the "
        "CPU backend's own forward/backward");
  } else {
    diagnostics.warning(
        "profile",
        "profile has no GPU and no host.cpu_gemm_gflops: forward and backward are predicted as 0 s");
  }
  if (r.compute.layer_forward <= 0) {
    const double c = r.compute_flops_per_rank;
    r.compute = {c, c, c, c};
  }
}

// A plan tier updated in place (memory, host): no I/O, so its curves, when the profile has
// them, are never used.
TierRates in_place_tier_rates(const PlanTier& pt, const TierProfile* tp) {
  TierRates t;
  if (tp != nullptr) t = tier_rates_of(*tp);
  t.name = pt.name;
  t.kind = pt.kind;
  t.remote = false;
  t.io_ratio_adam_busy = t.adam_ratio_io_busy = 1;
  return t;
}

// Each plan tier's rates, in plan order; returns the highest peak of the remote tiers.
double set_tier_rates(const Profile& profile, const Plan& plan, Rates& r, const Diagnostics& diagnostics) {
  double remote_peak = 0;
  std::string unmixed;  // tiers without measured read+write figures
  for (const auto& pt : plan.tiers) {
    const TierProfile* tp = profile.find_tier(pt.name);
    if (updated_in_place(pt.kind)) {
      r.tiers.push_back(in_place_tier_rates(pt, tp));
      continue;
    }
    if (tp == nullptr) {
      std::string known;
      for (const auto& t : profile.tiers) known += (known.empty() ? "" : ", ") + t.name;
      throw Error("plan tier '" + pt.name + "' is not in the profile (profile tiers: " + known +
                  "); re-run mlpo-tune with this profile or fix the plan's tier names");
    }
    const std::optional<TierProfile> measured = tp->at_io_setting(plan.io_setting());
    if (!measured) diagnostics.warning("tier '" + tp->name + "'", unmeasured_io_setting(*tp, plan));
    TierRates t = tier_rates_of(measured ? *measured : *tp);
    t.kind = pt.kind;
    if (!t.measured_mixed()) unmixed += (unmixed.empty() ? "'" : ", '") + t.name + "'";
    if (t.remote) remote_peak = std::max({remote_peak, t.peak_read_bps(), t.peak_write_bps()});
    r.tiers.push_back(std::move(t));
  }
  if (!unmixed.empty())
    diagnostics.warning("profile", "profile tier(s) " + unmixed +
                                       " have no mixed read+write figures (profile made before mlpo-profile "
                                       "measured them): reads and writes there are modelled as time-sharing "
                                       "one bandwidth; re-run "
                                       "mlpo-profile to measure how they overlap");
  return remote_peak;
}

}  // namespace

Rates rates_of(const Profile& profile, const Plan& plan, double remote_backbone_gbps) {
  Rates r;
  const Diagnostics diagnostics = collect_lines(r.warnings);
  r.ranks_per_node = plan.cluster.ranks_per_node;
  r.nodes = plan.cluster.nodes;
  set_adam_rates(profile.host, plan, r);
  set_compute_rates(profile, r, diagnostics);
  const double remote_peak = set_tier_rates(profile, plan, r, diagnostics);
  set_collective_rates(profile.comm, r, diagnostics);
  r.remote_backbone_bps =
      remote_backbone_gbps > 0 ? remote_backbone_gbps * 1e9 : remote_peak * static_cast<double>(r.nodes);
  return r;
}

}  // namespace mlpo
