#include "core/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/did_you_mean.hpp"
#include "core/error.hpp"

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

Json to_json(const Prediction& p) {
  Json tiers = Json::array();
  for (const auto& t : p.tiers)
    tiers.push_back(Json{{"name", t.name},
                         {"read_bytes", t.read_bytes},
                         {"write_bytes", t.write_bytes},
                         {"busy_s", t.busy_s}});
  return Json{{"iteration_s", p.iteration_s},
              {"forward_s", p.forward_s},
              {"backward_s", p.backward_s},
              {"update_s", p.update_s},
              {"stall_s", p.stall_s},
              {"adam_s", p.adam_s},
              {"model", p.model},
              {"tiers", tiers}};
}

Prediction prediction_from_json(const Json& json, const std::string& path) {
  JsonObject o(json, path);
  Prediction p;
  p.iteration_s = o.number("iteration_s", 0, 1e12);
  p.forward_s = o.number_or("forward_s", 0, 1e12, 0);
  p.backward_s = o.number_or("backward_s", 0, 1e12, 0);
  p.update_s = o.number("update_s", 0, 1e12);
  p.stall_s = o.number_or("stall_s", 0, 1e12, 0);
  p.adam_s = o.number_or("adam_s", 0, 1e12, 0);
  p.model = o.string_or("model", "");
  if (o.optional("tiers")) {
    const Json& arr = o.array("tiers");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      JsonObject t(arr[i], element_path(o.field("tiers"), i));
      TierPrediction tp;
      tp.name = t.string("name");
      tp.read_bytes = t.number("read_bytes", 0, 1e21);
      tp.write_bytes = t.number("write_bytes", 0, 1e21);
      tp.busy_s = t.number_or("busy_s", 0, 1e12, 0);
      t.finish();
      p.tiers.push_back(tp);
    }
  }
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
  if (p.io_block_size < 4096 || p.io_block_size % 4096 != 0)
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

Plan plan_from_json(const Json& json) {
  JsonObject root(json, "");
  root.expect_schema("mlpo.plan/1");
  Plan p;
  JsonObject model = root.object("model");
  p.model_name = model.string("name");
  p.model_params = model.integer("params", 1, INT64_MAX);
  model.finish();

  JsonObject c = root.object("cluster");
  p.cluster.nodes = c.integer_or("nodes", 1, 1 << 20, 1);
  p.cluster.ranks_per_node = c.integer_or("gpus_per_node", 1, 1 << 10, 1);
  p.cluster.micro_batch = c.integer_or("micro_batch", 1, 1 << 20, 1);
  p.cluster.seq_len = c.integer_or("seq_len", 0, 1 << 24, 0);
  p.cluster.grad_accum = c.integer_or("grad_accum", 1, 1 << 20, 1);
  c.finish();

  p.mode = root.choice_or("mode", {"mlp", "baseline"}, "mlp") == "mlp" ? PlanMode::mlp : PlanMode::baseline;
  p.subgroup_elements = root.integer("subgroup_elements", 1, std::int64_t{1} << 40);
  const Json& tiers = root.array("tiers");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    JsonObject t(tiers[i], element_path("tiers", i));
    PlanTier pt;
    pt.name = t.string("name");
    pt.kind = parse_tier_kind(t.string("kind"), t.field("kind"));
    pt.path = t.string_or("path", "");
    pt.fraction = t.number("fraction", 0, 1);
    pt.concurrency_limit = t.integer_or("concurrency_limit", 0, 1 << 20, 0);
    t.finish();
    p.tiers.push_back(pt);
  }
  p.host_cache_subgroups = root.integer_or("host_cache_subgroups", 0, std::int64_t{1} << 40, 0);
  p.buffers = root.integer_or("buffers", 1, 1 << 16, 4);
  p.prefetch_depth = root.integer_or("prefetch_depth", 0, 1 << 16, 2);
  if (root.optional("io")) {
    JsonObject io = root.object("io");
    p.io_block_size = io.integer_or("block_size", 1, std::int64_t{1} << 30, kDefaultIoBlockSize);
    p.io_queue_depth = io.integer_or("queue_depth", 1, 4096, kDefaultIoQueueDepth);
    p.direct_io = io.boolean_or("direct_io", true);
    p.crc = io.boolean_or("crc", true);
    p.slot_scope = io.choice_or("slot_scope", {"combined", "separate"}, "combined") == "combined"
                       ? SlotScope::combined
                       : SlotScope::separate;
    io.finish();
  }
  p.order = root.choice_or("order", {"ascending", "alternating"}, "alternating") == "ascending"
                ? OrderPolicy::ascending
                : OrderPolicy::alternating;
  p.gradients = root.choice_or("gradients", {"delayed", "flush-fp32"}, "delayed") == "delayed"
                    ? GradientPolicy::delayed
                    : GradientPolicy::flush_fp32;
  if (root.optional("prediction")) p.prediction = prediction_from_json(root.raw("prediction"), "prediction");
  if (root.optional("baseline_prediction"))
    p.baseline_prediction = prediction_from_json(root.raw("baseline_prediction"), "baseline_prediction");
  if (root.optional("alternatives")) p.alternatives = root.array("alternatives");
  if (root.optional("explanation")) p.explanation = root.raw("explanation");
  root.finish();
  validate(p);
  return p;
}

Json to_json(const Plan& p) {
  Json tiers = Json::array();
  for (const auto& t : p.tiers) {
    Json tj{{"name", t.name},
            {"kind", to_string(t.kind)},
            {"fraction", t.fraction},
            {"concurrency_limit", t.concurrency_limit}};
    if (!t.path.empty()) tj["path"] = t.path;
    tiers.push_back(tj);
  }
  Json j{{"schema", "mlpo.plan/1"},
         {"model", {{"name", p.model_name}, {"params", p.model_params}}},
         {"cluster",
          {{"nodes", p.cluster.nodes},
           {"gpus_per_node", p.cluster.ranks_per_node},
           {"micro_batch", p.cluster.micro_batch},
           {"seq_len", p.cluster.seq_len},
           {"grad_accum", p.cluster.grad_accum}}},
         {"mode", to_string(p.mode)},
         {"subgroup_elements", p.subgroup_elements},
         {"tiers", tiers},
         {"host_cache_subgroups", p.host_cache_subgroups},
         {"buffers", p.buffers},
         {"prefetch_depth", p.prefetch_depth},
         {"io",
          {{"block_size", p.io_block_size},
           {"queue_depth", p.io_queue_depth},
           {"direct_io", p.direct_io},
           {"crc", p.crc},
           {"slot_scope", to_string(p.slot_scope)}}},
         {"order", to_string(p.order)},
         {"gradients", to_string(p.gradients)}};
  if (p.prediction) j["prediction"] = to_json(*p.prediction);
  if (p.baseline_prediction) j["baseline_prediction"] = to_json(*p.baseline_prediction);
  if (!p.alternatives.empty()) j["alternatives"] = p.alternatives;
  if (!p.explanation.empty()) j["explanation"] = p.explanation;
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
