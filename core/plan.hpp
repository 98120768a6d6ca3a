#pragma once
// Plan ("schema": "mlpo.plan/1"): how one training job places and streams its optimizer
// state — subgroup size, the tiers with their share of subgroups and node-wide concurrency
// limit, host cache, pinned buffers, prefetch depth, I/O block size and queue depth, update
// order and gradient policy — plus the tuner's predicted breakdown for it and for the
// baseline. Written by `mlpo-tune`, read by `mlpo-run`; may be written by hand
// (docs/formats.md lists every field).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/io_setting.hpp"
#include "core/json_io.hpp"
#include "core/slot_scope.hpp"
#include "core/tier_kind.hpp"

namespace mlpo {

enum class PlanMode { mlp, baseline };
enum class OrderPolicy { ascending, alternating };
enum class GradientPolicy { delayed, flush_fp32 };

const char* to_string(PlanMode m);
const char* to_string(OrderPolicy o);
const char* to_string(GradientPolicy g);

struct PlanTier {
  std::string name;
  std::string path;  // empty for kind memory
  TierKind kind = TierKind::other;
  double fraction = 0;                 // share of subgroups placed here; all tiers sum to 1
  std::int64_t concurrency_limit = 0;  // node-wide in-flight subgroup transfers; 0 = no limit
};

struct TierPrediction {
  std::string name;
  double read_bytes = 0;
  double write_bytes = 0;
  double busy_s = 0;
};

struct Prediction {
  double iteration_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double update_s = 0;
  double stall_s = 0;
  double adam_s = 0;  // per rank: its AdamW calls in the update (their CPU work and the pool's wake-ups)
  std::string model;  // "simgrid" or "analytic"
  std::vector<TierPrediction> tiers;
};

struct Plan {
  std::string model_name;
  std::int64_t model_params = 0;  // checked against the model at run time
  ClusterShape cluster;
  PlanMode mode = PlanMode::mlp;
  std::int64_t subgroup_elements = 1 << 24;
  std::vector<PlanTier> tiers;
  std::int64_t host_cache_subgroups = 0;
  std::int64_t buffers = 4;         // pinned subgroup buffers per rank
  std::int64_t prefetch_depth = 2;  // subgroups read ahead of the one being updated
  std::int64_t io_block_size = kDefaultIoBlockSize;
  std::int64_t io_queue_depth = kDefaultIoQueueDepth;
  bool direct_io = true;
  bool crc = true;  // CRC32C of every tier extent, verified before use (docs/io.md); false opts out
  OrderPolicy order = OrderPolicy::alternating;
  GradientPolicy gradients = GradientPolicy::delayed;
  SlotScope slot_scope = SlotScope::combined;
  std::optional<Prediction> prediction;
  std::optional<Prediction> baseline_prediction;
  Json alternatives = Json::array();  // the tuner's runners-up (plans without alternatives)
  Json explanation = Json::object();  // the tuner's reasons, free-form

  const PlanTier* find_tier(const std::string& name) const;
  IoSetting io_setting() const { return {io_block_size, io_queue_depth}; }
  void set_io_setting(const IoSetting& s) {
    io_block_size = s.block_size;
    io_queue_depth = s.queue_depth;
  }
};

// Parses and validates; errors name the field (`tiers: fractions sum to 0.9, must sum to 1`).
Plan plan_from_json(const Json& json);
Json to_json(const Plan& plan);
Plan load_plan(const std::string& path);
void save_plan(const Plan& plan, const std::string& path);  // atomic

// Throws mlpo::Error when the plan's fields contradict each other (also called by
// plan_from_json), e.g. two tiers on one directory (compared after resolving symlinks, "."
// and ".."): they would share a state file. Baseline mode requires one tier, flush-fp32
// gradients, ascending order, no cache and no concurrency limit.
void validate(const Plan& plan);

// The baseline (ZeRO-3 NVMe offload) version of a plan, for side-by-side runs: the plan's
// first streamed tier alone (else its first file tier, else its first tier), flush-fp32 gradients, ascending
// order, no host cache, no concurrency limit, prefetch depth 1; subgroup size, buffers and
// I/O settings unchanged.
Plan baseline_of(const Plan& plan);

// Points tiers of a plan made on another machine at this machine's directories: each of
// `assignments` is "NAME=DIR" (`--tier-path nvme=/scratch/me`). mlpo::Error naming `flag` when a
// name is not one of the plan's tiers (with the closest one), DIR is not a directory, or two
// tiers end up on one directory.
void set_tier_paths(Plan& plan, const std::vector<std::string>& assignments, const std::string& flag);

Json to_json(const Prediction& p);
Prediction prediction_from_json(const Json& json, const std::string& path);

}  // namespace mlpo
