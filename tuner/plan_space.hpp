#pragma once
// PlanSpace: the candidate plans the tuner considers and the resources a plan must fit.
// Dimensions: which tiers (any non-empty subset of the profile's), each tier's node-wide
// concurrency limit (1..ranks per node, or none; none only for a tier updated in place), the
// tier fractions (proportional to each tier's bandwidth at that concurrency — for a tier
// updated in place, the rate CPU Adam consumes state at — then capped by its free capacity and,
// for RAM-backed tiers, by host memory), subgroup size, host cache size, pinned buffers with
// prefetch depth, update order and gradient policy.
// Constraints: host memory per node, each tier's free capacity, GPU memory per rank.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "simulator/options.hpp"

namespace mlpo::tune {

struct TuneRequest {
  ModelSpec model;
  ClusterShape shape;
  Profile profile;
  std::int64_t host_memory_budget = 0;  // bytes per node; 0: the profile's host.available_bytes
  int top_k = 3;                        // alternatives kept in the plan
  int simulate_top = 8;                 // analytic survivors ranked with SimGrid
  int jobs = 2;                         // SimGrid child processes at a time
  bool timeline = false;                // record the chosen plan's timeline
  bool ablations = true;                // simulate the chosen plan with each principle off
  sim::SimulationOptions options;       // update_only, remote backbone
  std::string baseline_tier;   // the baseline's tier; empty: node-local NVMe, else the fastest streamed
  bool param_offload = false;  // one rank: weights as `mlpo-run --param-offload` holds them
  std::function<void(const std::string&)> progress;  // called before each long step; may be empty
};

// Host memory a plan takes on one node (all its ranks).
struct HostMemoryNeed {
  double pinned_buffers = 0;
  double cache = 0;
  double bf16_weights = 0;
  double bf16_grads = 0;
  double state_in_memory = 0;  // optimizer state on memory and host (RAM-backed) tiers
  double cpu_model = 0;        // the CPU backend's model: its "device" memory is host memory
  double total() const {
    return pinned_buffers + cache + bf16_weights + bf16_grads + state_in_memory + cpu_model;
  }
};

// What a plan lacks, if anything: "host memory", "tier nvme capacity", "GPU memory".
struct Shortfall {
  std::string resource;
  double need = 0;
  double have = 0;
  std::string detail;  // what the need is made of
};

std::int64_t host_budget(const TuneRequest& request);
// Throws mlpo::Error for --param-offload with several ranks (mlpo-run allows it on one rank
// only; ZeRO-3 already gathers the weights a part at a time).
void check_param_offload(bool param_offload, const ClusterShape& shape);
// `cpu_model`: cpu_model_bytes(a, request) when the run computes on the CPU backend.
HostMemoryNeed host_memory_need(const Accounting& a, const Plan& plan, double cpu_model = 0);
// Host memory of the CPU backend's model on a node, as on a GPU (gpu_memory_need: weights,
// gradients, activations) for each rank: when the profile has no GPU and the run trains
// (not --update-only); else 0.
double cpu_model_bytes(const Accounting& a, const TuneRequest& request);
// Optimizer state (and fp32 gradients in flush mode) a plan puts on tier `t`, for the whole
// group that shares it: one node for local tiers, all nodes for remote ones.
double tier_bytes_needed(const Accounting& a, const Plan& plan, std::size_t t);
// Device memory one rank takes, as the executor allocates it (executor/compute/compute_backend.cpp,
// executor/model/device_memory.cpp): ZeRO-3 (several ranks) gathers one part's bf16 weights
// at a time and, with grad_accum 1, streams the gradients to the host part by part, so
// neither shard is resident; one rank keeps every weight (or, with --param-offload, two part
// slots); grad_accum > 1 keeps the full fp32 gradient and its partial sums. Plus the
// activations (per-layer checkpoints, one layer's intermediates, logits) and the backend's
// workspace.
struct GpuMemoryNeed {
  double weights = 0;
  double gradients = 0;
  double activations = 0;
  double workspace = 0;
  double total() const { return weights + gradients + activations + workspace; }
  std::string detail() const;  // "weights 1.2 GiB (one gathered layer) + ..."
  std::string weights_what;
  std::string gradients_what;
};
GpuMemoryNeed gpu_memory_need(const Accounting& a, bool param_offload);
// What to change when `need` exceeds `have` bytes: names the flag.
std::string gpu_memory_advice(const Accounting& a, bool param_offload, double have);

// The GPU memory per GPU a plan must fit in: the profile's, when it has GPUs and the request
// trains; none on a profile without GPUs or for --update-only (the update needs none).
std::optional<double> gpu_memory_budget(const TuneRequest& request);

std::optional<Shortfall> check_fits(const Accounting& a, const Plan& plan, const TuneRequest& request);

// One tier subset with a concurrency limit per member and a gradient policy: the part of a
// candidate before its subgroup size, cache, pipeline and order are chosen.
struct TierSetting {
  std::vector<std::size_t> members;  // indices into the profile's tiers, ascending
  std::vector<std::int64_t> limits;  // per member; 0: none
  GradientPolicy gradients = GradientPolicy::delayed;
};

// The limits a profile tier may take: 1..ranks per node and none (0); none only for a tier
// updated in place. A remote tier's slots are the cluster's (its lock files live on the
// shared file system): nodes x (1..ranks per node), the same slots per node on average.
std::vector<std::int64_t> limit_values(const Profile& profile, std::size_t tier, const ClusterShape& shape);
// A tier's limit as one node sees it: a remote tier's k shared by the nodes (at least 1).
std::int64_t node_limit(const TierProfile& tier, std::int64_t k, std::int64_t nodes);
// The grid's subgroup sizes: 4, 16, 64, 256 Mi elements keeping >= 8 subgroups per rank.
std::vector<std::int64_t> grid_subgroup_sizes(const Accounting& a);
// The I/O settings (block size, queue depth) the profile measured on every streamed tier of
// `members` (indices into its tiers), in the first streamed tier's order (its main setting
// first); empty when no member streams or they share none.
std::vector<IoSetting> common_io_settings(const Profile& profile, const std::vector<std::size_t>& members);
// The setting's tiers and gradient policy as a plan (fractions 0, grid defaults elsewhere;
// I/O block size and queue depth: the first common_io_settings, or without one the largest
// of the streamed tiers' main ones).
Plan tier_setting_plan(const Accounting& a, const TuneRequest& request, const TierSetting& setting);
// Sets the plan's tier fractions: proportional to each tier's bandwidth at its limit (Adam's
// rate for a tier updated in place), capped by capacity and, for RAM-backed tiers, by the host
// memory the plan's buffers, cache and bf16 copies leave. False when the tiers cannot hold
// the state or one would get less than 0.1 %.
bool fill_fractions(const Accounting& a, const TuneRequest& request, Plan& plan);
// The grid's candidates of one setting: every subgroup size x (buffers, prefetch) x order x
// cache, fractions filled (those fill_fractions rejects left out).
std::vector<Plan> grid_variants(const Accounting& a, const TuneRequest& request, const TierSetting& setting);

// Every candidate plan of the grid (before constraints), deterministic order: every tier
// subset x every limit combination x gradient policy x grid_variants. Exponential in the
// tiers (the search does not enumerate it; tests compare the search against it).
std::vector<Plan> candidate_plans(const Accounting& a, const TuneRequest& request);

// The baseline plan (ZeRO-3 NVMe-offload style) on one tier: `request.baseline_tier` when set
// (mlpo::Error listing the profile's tiers when it is not one of them, or naming the shortfall
// when it cannot hold the state and fp32 gradients); otherwise the fastest node-local NVMe tier
// that holds them, else the fastest streamed tier that does (a tier updated in place only when
// no streamed tier can). Never a faster remote tier in place of a fitting NVMe one: the
// baseline is ZeRO-3's NVMe offload. nullopt when no tier can.
std::optional<Plan> baseline_plan(const Accounting& a, const TuneRequest& request,
                                  std::int64_t subgroup_elements);

// Throws an mlpo::Error saying which resource is short and by how much, for a request that
// no candidate fits.
[[noreturn]] void report_infeasible(const Accounting& a, const TuneRequest& request);

}  // namespace mlpo::tune
