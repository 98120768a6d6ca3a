#include "core/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/did_you_mean.hpp"
#include "core/error.hpp"
#include "core/internal/json_fields.hpp"

namespace mlpo {

namespace {

// Shortest text that reads back as `x` to 6 significant digits: 0.9, not 0.900000.
std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

}  // namespace

const char* to_string(PlanMode m) { return m == PlanMode::mlp ? "mlp" : "baseline"; }
const char* to_string(OrderPolicy o) { return o == OrderPolicy::ascending ? "ascending" : "alternating"; }
const char* to_string(GradientPolicy g) { return g == GradientPolicy::delayed ? "delayed" : "flush-fp32"; }

const PlanTier* Plan::find_tier(const std::string& name) const {
  for (const auto& t : tiers)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

const JsonFields<Prediction>& prediction_fields() {
  using P = Prediction;
  using T = TierPrediction;
  static const JsonFields<T> tier_fields{
      string_field("name", &T::name, Presence::required, "the tier"),
      number_field("read_bytes", &T::read_bytes, 0, 1e21, "bytes read from it per iteration"),
      number_field("write_bytes", &T::write_bytes, 0, 1e21, "bytes written to it per iteration"),
      number_field("busy_s", &T::busy_s, 0, 1e12, 0, "seconds it is busy per iteration")};
  static const JsonFields<P> fields{
      number_field("iteration_s", &P::iteration_s, 0, 1e12, "one iteration"),
      number_field("forward_s", &P::forward_s, 0, 1e12, 0, "forward"),
      number_field("backward_s", &P::backward_s, 0, 1e12, 0, "backward"),
      number_field("update_s", &P::update_s, 0, 1e12, "the update phase"),
      number_field("stall_s", &P::stall_s, 0, 1e12, 0, "AdamW waiting for reads"),
      number_field("adam_s", &P::adam_s, 0, 1e12, 0, "one rank's AdamW calls in the update"),
      string_field("model", &P::model, Presence::optional, "simgrid or analytic"),
      array_field("tiers", &P::tiers, Presence::optional, tier_fields, "per tier")};
  return fields;
}

}  // namespace

Json to_json(const Prediction& p) {
  Json j = Json::object();
  write_fields(prediction_fields(), p, j);
  return j;
}

Prediction prediction_from_json(const Json& json, const std::string& path) {
  JsonObject o(json, path);
  Prediction p;
  read_fields(prediction_fields(), o, p);
  o.finish();
  return p;
}

namespace {

// The directory a tier path names, after symlinks, "." and ".." (weakly_canonical: the path
// need not exist yet when the plan is checked).
std::filesystem::path resolved_directory(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) p = std::filesystem::absolute(path, ec).lexically_normal();
  std::string text = p.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

// Two tiers on one directory would open the same state file (<path>/mlpo/<run>/rank<r>.state)
// and overwrite each other's subgroups: refuse, naming both.
void check_distinct_directories(const Plan& p) {
  std::vector<std::pair<std::filesystem::path, std::size_t>> seen;
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const auto& t = p.tiers[i];
    if (t.kind == TierKind::memory) continue;
    const std::filesystem::path dir = resolved_directory(t.path);
    for (const auto& [other_dir, j] : seen) {
      if (other_dir != dir) continue;
      const auto& o = p.tiers[j];
      throw Error(element_path("tiers", i) + ".path: tier '" + t.name + "' (" + t.path + ") and tier '" +
                  o.name + "' (" + o.path + ") are the same directory " + dir.string() +
                  ": they would share one state file and overwrite each other's subgroups; give each tier "
                  "its own directory");
    }
    seen.emplace_back(dir, i);
  }
}

}  // namespace

void validate(const Plan& p) {
  if (p.tiers.empty()) throw Error("tiers: a plan needs at least one tier");
  std::set<std::string> names;
  double sum = 0;
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const auto& t = p.tiers[i];
    std::string at = element_path("tiers", i);
    if (t.name.empty()) throw Error(at + ".name: must not be empty");
    if (!names.insert(t.name).second)
      throw Error(at + ".name: duplicate tier name '" + t.name + "' (tier names must be unique)");
    if (t.kind != TierKind::memory && t.path.empty())
      throw Error(at + ".path: missing (required for a " + std::string(to_string(t.kind)) + " tier)");
    if (!(t.fraction >= 0 && t.fraction <= 1)) throw Error(at + ".fraction: must be between 0 and 1");
    if (t.concurrency_limit < 0) throw Error(at + ".concurrency_limit: must be >= 0 (0 means no limit)");
    sum += t.fraction;
  }
  check_distinct_directories(p);
  if (std::fabs(sum - 1.0) > 1e-6)
    throw Error("tiers: fractions sum to " + format_number(sum) + ", they must sum to 1");
  if (p.subgroup_elements < 1024 || p.subgroup_elements % 1024 != 0)
    throw Error(
        "subgroup_elements: must be a positive multiple of 1024 (so each state array stays 4 KiB aligned), "
        "got " +
        std::to_string(p.subgroup_elements));
  if (p.buffers < 2)
    throw Error("buffers: need at least 2 pinned subgroup buffers (one updating, one in flight)");
  if (p.prefetch_depth < 1 || p.prefetch_depth > p.buffers)
    throw Error("prefetch_depth: must be between 1 and buffers (" + std::to_string(p.buffers) + ")");
  if (p.io_block_size < kIoBlockAlign || p.io_block_size % kIoBlockAlign != 0)
    throw Error("io.block_size: must be a multiple of 4096");
  if (p.mode == PlanMode::baseline) {
    auto need = [](bool ok, const std::string& what) {
      if (!ok)
        throw Error("mode: baseline requires " + what +
                    " (it reproduces ZeRO-3 NVMe offload; use mode \"mlp\" otherwise)");
    };
    need(p.tiers.size() == 1, "exactly one tier");
    need(p.gradients == GradientPolicy::flush_fp32, "gradients \"flush-fp32\"");
    need(p.order == OrderPolicy::ascending, "order \"ascending\"");
    need(p.host_cache_subgroups == 0, "host_cache_subgroups 0");
    need(p.tiers[0].concurrency_limit == 0, "no concurrency limit (0)");
  }
}

Plan baseline_of(const Plan& plan) {
  Plan b = plan;
  // The first streamed tier: ZeRO-3 NVMe offload moves its state over storage I/O, so a tier
  // updated in place (a mapped host tier, memory) is the baseline's only when none streams.
  auto first = [&](auto&& pick) {
    auto it = std::find_if(plan.tiers.begin(), plan.tiers.end(), pick);
    return it == plan.tiers.end() ? nullptr : &*it;
  };
  const PlanTier* chosen = first([](const PlanTier& t) { return !updated_in_place(t.kind); });
  if (!chosen) chosen = first([](const PlanTier& t) { return t.kind != TierKind::memory; });
  PlanTier tier = chosen ? *chosen : plan.tiers.front();
  tier.fraction = 1.0;
  tier.concurrency_limit = 0;
  b.tiers = {tier};
  b.mode = PlanMode::baseline;
  b.gradients = GradientPolicy::flush_fp32;
  b.order = OrderPolicy::ascending;
  b.host_cache_subgroups = 0;
  b.prefetch_depth = 1;
  b.prediction.reset();
  b.baseline_prediction.reset();
  b.alternatives = Json::array();
  b.explanation = Json::object();
  validate(b);
  return b;
}

namespace {

const JsonFields<PlanTier>& plan_tier_fields() {
  using T = PlanTier;
  static const JsonFields<T> fields{
      string_field("name", &T::name, Presence::required, "unique"),
      parsed_field("kind", &T::kind, parse_tier_kind, static_cast<const char* (*)(TierKind)>(to_string),
                   "memory | host | nvme | remote | other", "what backs the tier"),
      string_field("path", &T::path, Presence::optional_written_when_set,
                   "directory (required unless memory)"),
      number_field("fraction", &T::fraction, 0, 1, "share of subgroups placed here; all sum to 1"),
      int_field("concurrency_limit", &T::concurrency_limit, 0, 1 << 20, 0,
                "node-wide in-flight subgroup transfers; 0 = unlimited")};
  return fields;
}

const JsonFields<ClusterShape>& cluster_fields() {
  using C = ClusterShape;
  static const JsonFields<C> fields{
      int_field("nodes", &C::nodes, 1, 1 << 20, 1, "nodes"),
      int_field("gpus_per_node", &C::ranks_per_node, 1, 1 << 10, 1, "ranks per node"),
      int_field("micro_batch", &C::micro_batch, 1, 1 << 20, 1, "sequences per micro-batch"),
      int_field("seq_len", &C::seq_len, 0, 1 << 24, 0, "tokens per sequence; 0: the model's"),
      int_field("grad_accum", &C::grad_accum, 1, 1 << 20, 1, "micro-batches per step")};
  return fields;
}

const JsonFields<Plan>& plan_io_fields() {
  static const JsonFields<Plan> fields{
      int_field("block_size", &Plan::io_block_size, 1, kMaxIoBlockSize, kDefaultIoBlockSize,
                "I/O request size, a multiple of 4096"),
      int_field("queue_depth", &Plan::io_queue_depth, 1, kMaxIoQueueDepth, kDefaultIoQueueDepth,
                "requests in flight per transfer"),
      bool_field("direct_io", &Plan::direct_io, true, "O_DIRECT"),
      bool_field("crc", &Plan::crc, true, "CRC32C of every tier extent"),
      choice_field("slot_scope", &Plan::slot_scope,
                   {{"combined", SlotScope::combined}, {"separate", SlotScope::separate}},
                   SlotScope::combined, "reads and writes share the k slots, or have k each")};
  return fields;
}

// The tuner's predictions (optional, written when there is one).
JsonField<Plan> prediction_field(const char* key, std::optional<Prediction> Plan::*member) {
  auto read = [=](JsonObject& o, Plan& p) {
    if (o.optional(key)) p.*member = prediction_from_json(o.raw(key), key);
  };
  auto write = [=](const Plan& p, Json& j) {
    if (p.*member) j[key] = to_json(*(p.*member));
  };
  return custom_field<Plan>(key, "object, optional", "none", "the tuner's predicted breakdown", read, write);
}

// Free-form JSON the tuner writes (its runners-up, its reasons): kept as it is, written when not
// empty.
JsonField<Plan> free_form_field(const char* key, Json Plan::*member, bool array, const char* doc) {
  auto read = [=](JsonObject& o, Plan& p) {
    if (o.optional(key)) p.*member = array ? o.array(key) : o.raw(key);
  };
  auto write = [=](const Plan& p, Json& j) {
    if (!(p.*member).empty()) j[key] = p.*member;
  };
  return custom_field<Plan>(key, array ? "array, optional" : "object, optional", "none", doc, read, write);
}

const JsonFields<Plan>& plan_fields() {
  static const JsonFields<Plan> model_fields{
      string_field("name", &Plan::model_name, Presence::required, "the model the plan was made for"),
      int_field("params", &Plan::model_params, 1, INT64_MAX, "its parameter count, checked at run time")};
  static const JsonFields<Plan> fields{
      group_field("model", true, model_fields, "the model"),
      object_field("cluster", &Plan::cluster, cluster_fields(), "the cluster shape"),
      choice_field("mode", &Plan::mode, {{"mlp", PlanMode::mlp}, {"baseline", PlanMode::baseline}},
                   PlanMode::mlp, "baseline reproduces ZeRO-3 NVMe offload"),
      int_field("subgroup_elements", &Plan::subgroup_elements, 1, std::int64_t{1} << 40,
                "elements per subgroup, a multiple of 1024"),
      array_field("tiers", &Plan::tiers, Presence::required, plan_tier_fields(), "the tiers, at least one"),
      int_field("host_cache_subgroups", &Plan::host_cache_subgroups, 0, std::int64_t{1} << 40, 0,
                "subgroups kept in host memory"),
      int_field("buffers", &Plan::buffers, 1, 1 << 16, 4, "pinned subgroup buffers per rank"),
      int_field("prefetch_depth", &Plan::prefetch_depth, 0, 1 << 16, 2, "subgroups read ahead"),
      group_field("io", false, plan_io_fields(), "how the tiers are driven"),
      choice_field("order", &Plan::order,
                   {{"ascending", OrderPolicy::ascending}, {"alternating", OrderPolicy::alternating}},
                   OrderPolicy::alternating, "update order"),
      choice_field("gradients", &Plan::gradients,
                   {{"delayed", GradientPolicy::delayed}, {"flush-fp32", GradientPolicy::flush_fp32}},
                   GradientPolicy::delayed, "bf16 gradients in host memory, or fp32 through the tier"),
      prediction_field("prediction", &Plan::prediction),
      prediction_field("baseline_prediction", &Plan::baseline_prediction),
      free_form_field("alternatives", &Plan::alternatives, true, "the tuner's runners-up"),
      free_form_field("explanation", &Plan::explanation, false, "the tuner's reasons")};
  return fields;
}

}  // namespace

Plan plan_from_json(const Json& json) {
  Plan p = read_document(json, "mlpo.plan/1", plan_fields());
  validate(p);
  return p;
}

Json to_json(const Plan& p) {
  Json j{{"schema", "mlpo.plan/1"}};
  write_fields(plan_fields(), p, j);
  return j;
}

Plan load_plan(const std::string& path) {
  return load_json_file(path, "an mlpo.plan/1 plan (made by mlpo-tune, or by hand: see docs/formats.md)",
                        plan_from_json);
}

void save_plan(const Plan& plan, const std::string& path) {
  write_file_atomic(path, to_json(plan).dump(2) + "\n");
}

void set_tier_paths(Plan& plan, const std::vector<std::string>& assignments, const std::string& flag) {
  for (const std::string& text : assignments) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw Error(flag + " " + text +
                  ": expected NAME=DIR (a tier of the plan and its directory on this machine)");
    const std::string name = text.substr(0, eq), dir = text.substr(eq + 1);
    std::vector<std::string> names;
    PlanTier* tier = nullptr;
    for (auto& t : plan.tiers) {
      names.push_back(t.name);
      if (t.name == name) tier = &t;
    }
    if (tier == nullptr) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw Error(flag + " " + text + ": the plan has no tier '" + name + "'" + did_you_mean(name, names) +
                  " (its tiers: " + list + ")");
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw Error(flag + " " + text + ": " + dir + " is not a directory; create it (mkdir -p " + dir +
                  ") or name another");
    tier->path = dir;
  }
  validate(plan);  // two tiers on one directory would share a state file
}

}  // namespace mlpo
