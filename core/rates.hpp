#pragma once
// Rates: the one path from a profile's figures to the rates every model of an iteration uses
// — the simulator's two models, the tuner's tier split and the executor's physical bound of
// the update phase. For one plan, rates_of gives compute FLOP/s per rank, PCIe bytes/s per
// GPU, the node's CPU-Adam throughput as its ranks share the cores, and each plan tier's
// read/write bandwidth (tier_rates_of); node_adam_elements_per_s is the Adam throughput
// formula itself, and tier_update_bps / in_place_update_bps what a tier delivers to the
// update phase (the tuner splits the state in proportion). A tier's curves and the formulas
// on them are core/tier_rates.hpp. Bandwidths are bytes/s (the profile stores decimal GB/s).

#include <cstdint>
#include <string>
#include <vector>

#include "core/adam_split.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/tier_rates.hpp"

namespace mlpo {

// One profile tier's curves, ready for the formulas of core/tier_rates.hpp.
TierRates tier_rates_of(const TierProfile& tier);

// Threads one rank's Adam uses in the models: the node's cores split evenly over its ranks,
// at least one. (The executor runs whole threads; it passes its own count below.)
double adam_threads_per_rank(std::int64_t cores, std::int64_t ranks_per_node);

// Aggregate fused-AdamW elements/s of a node with `cores` cores when `ranks` ranks run Adam at
// once on `threads_per_rank` threads each: the profile's curve (elements/s by threads) at the
// threads in use, never more than the cores.
double node_adam_elements_per_s(const std::vector<CurvePoint>& adam_curve, double cores, double ranks,
                                double threads_per_rank);

// Aggregate node bandwidth of a streamed tier for the update's even read/write mix when R
// ranks stream to it (one reader and one writer each) under a combined limit k (0: none).
double tier_update_bps(const TierProfile& tier, std::int64_t ranks, std::int64_t k);

// What a tier updated in place (memory, host) delivers to the update: it moves no bytes, so
// the rate at which the node's CPU Adam consumes state — `ranks` ranks on their share of the
// cores — in the bytes of the even read/write mix tier_update_bps gives a streamed tier
// (24 B an element).
double in_place_update_bps(const HostProfile& host, std::int64_t ranks);

// The parts of an iteration's compute the profile may time apart (ModelComputeFigures): a
// transformer layer, and the head (embedding lookup, final norm, lm_head, loss).
enum class ComputePart { layer, head };

// FLOP/s of one rank for the forward and the backward of each part, against the FLOP counts
// of core/accounting.hpp. From the profile's measured per-part figures when it has them (the
// CPU backend's host.cpu_model), else one rate (the GPU's bf16 GEMM, the CPU GEMM) for all.
struct ComputeRates {
  double layer_forward = 0, layer_backward = 0, head_forward = 0, head_backward = 0;
  // The layer's backward rate was measured on a layer that recomputes its forward (the
  // executor's own model, host.cpu_model): the last layer, whose activations are still live,
  // skips that recompute and takes its backward minus one forward.
  bool last_layer_skips_recompute = false;
  // Parameter offload on the CPU backend (`mlpo-run --param-offload`): each part's bf16
  // weights are copied from host memory before it runs, in both passes, at this many bytes/s
  // (0: the weights are resident, nothing to copy).
  double weight_copy_bps = 0;
  double of(ComputePart part, bool backward) const;
  // Seconds of `flops` of that part and pass; 0 when the rate is 0 (not predicted).
  double seconds(ComputePart part, bool backward, double flops) const;
};

// One rank's ComputeRates from the profile's CPU model (host.cpu_model measured): a node of
// one rank gets the all-core figures; R ranks on the node each get their cores / R threads'
// worth, between the one-thread figures (host.cpu_model_one_thread) and the all-core ones (a
// rank on less than one core: its share of the one-thread figures); without one-thread
// figures, the all-core ones over R.
ComputeRates cpu_model_rates(const HostProfile& host, std::int64_t ranks_per_node);

struct Rates {
  std::int64_t ranks_per_node = 1;
  std::int64_t nodes = 1;
  bool compute_on_gpu = false;
  double compute_flops_per_rank = 0;  // 0: the profile has no compute figure (forward/backward not predicted)
  ComputeRates compute;               // per part and pass; what forward/backward are predicted from
  double h2d_bps = 0;                 // per GPU; 0 without GPUs (weights and gradients stay in host memory)
  double d2h_bps = 0;
  std::int64_t cores = 1;
  std::vector<CurvePoint> adam_curve;  // elements/s by threads
  // The gradient norm's pass over the node's bf16 gradients after backward, elements/s of the
  // node (its ranks share the cores); 0: the profile has no figure (not modelled).
  double grad_norm_eps = 0;
  std::vector<TierRates> tiers;    // in plan order; kind is the plan tier's
  double remote_backbone_bps = 0;  // cluster-wide, per direction
  // ZeRO-3 collectives of one rank (several ranks only): bus bytes/s of the per-layer
  // all-gather and reduce-scatter and the latency of one collective (CollectiveRates in
  // core/profile.hpp). 0 bandwidth: not modelled (the profile has no figures; warning line).
  double all_gather_bps = 0;
  double reduce_scatter_bps = 0;
  double collective_latency_s = 0;
  // What rates_of reported through the diagnostics channel, as a result carries it
  // (collect_lines in core/diagnostics.hpp): a line starting "note: " is information, not a warning.
  std::vector<std::string> warnings;

  // The CPU backend's resident bf16 weights (one rank, no --param-offload): after each
  // subgroup's AdamW the rank copies the subgroup's new bf16 weights into the model's, on one
  // thread (CpuBackend's memcpy), at this many bytes/s; 0: no such copy.
  double update_weight_copy_bps = 0;
  // Elements per split of one subgroup's AdamW over a rank's threads (core/adam_split.hpp):
  // the integrity chunk with the plan's io.crc on, else the AdamW grain.
  std::int64_t adam_grain = kAdamWGrainElements;
  // The pool's wake-up and join (host.pool_dispatch_s), seconds; 0: not in the profile.
  double pool_dispatch_s = 0;
  // One thread's start and join (host.thread_start_s), seconds; 0: not in the profile. Each
  // update pays it for every reader and writer thread its pipeline starts (simulator/internal/workload.hpp).
  double thread_start_s = 0;

  // Aggregate Adam elements/s of the node when `ranks` ranks run Adam at once, each on its
  // adam_threads_per_rank(cores, ranks_per_node) threads.
  double adam_node_eps(double ranks) const;
  // One subgroup's AdamW of `elements` as work at adam_node_eps's rate: more than `elements`
  // when the subgroup has fewer grains than a rank has threads (it keeps fewer busy).
  double adam_work(double elements) const;
  // Seconds one subgroup's AdamW call waits on the pool beyond its work (Adam running alone on
  // the node's ranks): the calling thread runs the first range while the pool wakes the others
  // (pool_dispatch_s), so the call takes the longer of the caller's range and the wake-up plus
  // the next range (ThreadPool's static split: the caller's is never shorter); 0 on one thread.
  double adam_call_s(double elements) const;
};

// Throws mlpo::Error when a streamed plan tier is not in the profile (names the tier and the
// profile's tiers). A tier updated in place (memory, host) moves no bytes, so it needs no
// figures: it may be missing from the profile, and its curves are never used (the tuner
// checks its capacity and the host memory it takes). `remote_backbone_gbps` 0 means no
// cluster-wide limit beyond each node's own link.
Rates rates_of(const Profile& profile, const Plan& plan, double remote_backbone_gbps);

}  // namespace mlpo
