#include "tuner/internal/scenario_edit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::tune {

namespace {

enum class Unit { rate, bytes, count, other };

const std::vector<std::string> kTierFields = {"read_gbps", "write_gbps", "gbps",
                                              "capacity",  "free",       "latency_us"};
const std::vector<std::string> kHostFields = {"memory", "available", "memcpy_gbps", "adam", "compute"};
const std::vector<std::string> kGpuFields = {"tflops", "pcie_gbps", "memory"};
const std::vector<std::string> kCommPaths = {"host_mpi", "nccl", "inter_node"};
const std::vector<std::string> kCommFields = {"gbps", "latency_us"};
const std::vector<std::string> kShapeFields = {"nodes", "gpus_per_node", "micro_batch", "grad_accum",
                                               "seq_len"};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// A target split at its dots: "tier.nvme.read_gbps" -> {"tier", "nvme", "read_gbps"} (a tier
// name may itself contain dots: the field is the last part).
struct TargetParts {
  std::string family, name, field;
};

TargetParts split_target(const std::string& edit, const std::string& target) {
  const std::size_t dot = target.find('.');
  if (dot == std::string::npos) return {target, "", ""};
  const std::string family = target.substr(0, dot);
  const std::string rest = target.substr(dot + 1);
  if (family == "tier" || family == "comm") {
    const std::size_t last = rest.rfind('.');
    if (last == std::string::npos || last == 0 || last + 1 == rest.size())
      throw Error("--what-if " + edit + ": expected " + family + ".NAME.FIELD, e.g. " +
                  (family == "tier" ? "tier.nvme.read_gbps*2" : "comm.inter_node.gbps=25"));
    return {family, rest.substr(0, last), rest.substr(last + 1)};
  }
  return {family, "", rest};
}

Unit unit_of(const std::string& edit, const TargetParts& t) {
  auto unknown = [&](const std::string& what, const std::vector<std::string>& fields) {
    throw Error("--what-if " + edit + ": unknown " + what + " '" + t.field + "'; it has " + joined(fields));
  };
  if (t.family == "tier") {
    if (!contains(kTierFields, t.field)) unknown("tier field", kTierFields);
    return t.field == "capacity" || t.field == "free" ? Unit::bytes : Unit::rate;
  }
  if (t.family == "host") {
    if (!contains(kHostFields, t.field)) unknown("host field", kHostFields);
    return t.field == "memory" || t.field == "available" ? Unit::bytes : Unit::rate;
  }
  if (t.family == "gpu") {
    if (!contains(kGpuFields, t.field)) unknown("gpu field", kGpuFields);
    return t.field == "memory" ? Unit::bytes : Unit::rate;
  }
  if (t.family == "comm") {
    if (!contains(kCommPaths, t.name))
      throw Error("--what-if " + edit + ": unknown comm path '" + t.name + "'; the paths are " +
                  joined(kCommPaths));
    if (!contains(kCommFields, t.field)) unknown("comm field", kCommFields);
    return Unit::rate;
  }
  if (contains(kShapeFields, t.family) && t.field.empty()) return Unit::count;
  if (t.family == "remote_backbone_gbps" && t.field.empty()) return Unit::rate;
  throw Error("--what-if " + edit + ": unknown target; targets are tier.NAME.FIELD, host.FIELD, gpu.FIELD, " +
              "comm.PATH.FIELD, " + joined(kShapeFields) +
              ", remote_backbone_gbps (mlpo-tune --help lists them with their units)");
}

double parse_number(const std::string& edit, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw Error("--what-if " + edit + ": '" + text + "' is not a number");
  return v;
}

void scale(Measurement& m, double f) {
  m.median *= f;
  m.min *= f;
  m.max *= f;
}

void scale(std::vector<CurvePoint>& curve, double f) {
  for (CurvePoint& p : curve) scale(p.value, f);
}

double peak(const std::vector<CurvePoint>& curve) {
  double best = 0;
  for (const CurvePoint& p : curve) best = std::max(best, p.value.median);
  return best;
}

void scale(ModelComputeFigures& m, double f) {
  scale(m.layer_forward_gflops, f);
  scale(m.layer_backward_gflops, f);
  scale(m.head_forward_gflops, f);
  scale(m.head_backward_gflops, f);
}

// One figure of a scenario an edit reads and changes. `set` is empty where setting is
// scaling by value / get().
struct Figure {
  std::function<double()> get;
  std::function<void(double)> scale_by;
  std::function<void(double)> set;
};

TierProfile& tier_named(Scenario& s, const std::string& edit, const std::string& name) {
  for (TierProfile& t : s.profile.tiers)
    if (t.name == name) return t;
  std::string names;
  for (const auto& t : s.profile.tiers) names += (names.empty() ? "" : ", ") + t.name;
  throw Error("--what-if " + edit + ": the profile has no tier '" + name + "'; its tiers are " + names);
}

Figure tier_figure(Scenario& s, const std::string& edit, const TargetParts& t) {
  TierProfile& tier = tier_named(s, edit, t.name);
  // One direction's curves, alone and mixed, at the main setting and at every other one.
  using Curve = std::vector<CurvePoint>;
  auto direction = [&tier](Curve TierProfile::*alone, Curve TierProfile::*mixed,
                           Curve TierIoSetting::*io_alone, Curve TierIoSetting::*io_mixed) {
    return [&tier, alone, mixed, io_alone, io_mixed](double f) {
      scale(tier.*alone, f);
      scale(tier.*mixed, f);
      for (TierIoSetting& io : tier.io_settings) {
        scale(io.*io_alone, f);
        scale(io.*io_mixed, f);
      }
    };
  };
  auto reads = direction(&TierProfile::read_gbps, &TierProfile::mixed_read_gbps, &TierIoSetting::read_gbps,
                         &TierIoSetting::mixed_read_gbps);
  auto writes = direction(&TierProfile::write_gbps, &TierProfile::mixed_write_gbps,
                          &TierIoSetting::write_gbps, &TierIoSetting::mixed_write_gbps);
  if (t.field == "read_gbps") return {[&tier] { return peak(tier.read_gbps); }, reads, {}};
  if (t.field == "write_gbps") return {[&tier] { return peak(tier.write_gbps); }, writes, {}};
  if (t.field == "gbps")
    return {[&tier] { return peak(tier.read_gbps); },
            [reads, writes](double f) {
              reads(f);
              writes(f);
            },
            {}};
  if (t.field == "latency_us")
    return {[&tier] { return tier.latency_us.median; }, [&tier](double f) { scale(tier.latency_us, f); },
            [&tier](double v) {
              tier.latency_us = Measurement{v, v, v, 0, 0};
            }};
  if (t.field == "capacity") {
    auto set = [&tier](double v) {
      const double used = static_cast<double>(tier.capacity_bytes - tier.free_bytes);
      tier.capacity_bytes = static_cast<std::int64_t>(v);
      tier.free_bytes = static_cast<std::int64_t>(std::max(0.0, v - used));
    };
    return {[&tier] { return static_cast<double>(tier.capacity_bytes); },
            [&tier, set](double f) { set(static_cast<double>(tier.capacity_bytes) * f); }, set};
  }
  auto set = [&tier](double v) {
    tier.free_bytes = static_cast<std::int64_t>(v);
    tier.capacity_bytes = std::max(tier.capacity_bytes, tier.free_bytes);
  };
  return {[&tier] { return static_cast<double>(tier.free_bytes); },
          [&tier, set](double f) { set(static_cast<double>(tier.free_bytes) * f); }, set};
}

Figure host_figure(Scenario& s, const std::string& edit, const TargetParts& t) {
  HostProfile& h = s.profile.host;
  if (t.field == "memory") {
    auto set = [&h](double v) {
      const double delta = v - static_cast<double>(h.memory_bytes);
      h.memory_bytes = static_cast<std::int64_t>(v);
      h.available_bytes =
          static_cast<std::int64_t>(std::clamp(static_cast<double>(h.available_bytes) + delta, 0.0, v));
    };
    return {[&h] { return static_cast<double>(h.memory_bytes); },
            [&h, set](double f) { set(static_cast<double>(h.memory_bytes) * f); }, set};
  }
  if (t.field == "available") {
    auto set = [&h, edit](double v) {
      if (v > static_cast<double>(h.memory_bytes))
        throw Error("--what-if " + edit + ": more than host.memory (" +
                    format_bytes(static_cast<double>(h.memory_bytes)) + "); raise host.memory first");
      h.available_bytes = static_cast<std::int64_t>(v);
    };
    return {[&h] { return static_cast<double>(h.available_bytes); },
            [&h, set](double f) { set(static_cast<double>(h.available_bytes) * f); }, set};
  }
  if (t.field == "memcpy_gbps")
    return {[&h] { return h.memcpy_gbps.median > 0 ? h.memcpy_gbps.median : h.memcpy_gbps_single.median; },
            [&h](double f) {
              scale(h.memcpy_gbps, f);
              scale(h.memcpy_gbps_single, f);
            },
            {}};
  if (t.field == "adam")
    return {[&h] { return peak(h.adam_elements_per_s); },
            [&h](double f) {
              scale(h.adam_elements_per_s, f);
              scale(h.adam_checked_elements_per_s, f);
              scale(h.crc32c_gbps, f);
            },
            {}};
  // compute: the CPU backend's forward/backward figures and its GEMM rate.
  return {[&h] {
            return h.cpu_model.measured() ? h.cpu_model.layer_forward_gflops.median
                                          : h.cpu_gemm_gflops.median;
          },
          [&h](double f) {
            scale(h.cpu_model, f);
            scale(h.cpu_model_one_thread, f);
            scale(h.cpu_gemm_gflops, f);
          },
          {}};
}

Figure gpu_figure(Scenario& s, const std::string& edit, const TargetParts& t) {
  if (s.profile.gpus.empty())
    throw Error("--what-if " + edit + ": the profile has no GPU (" + s.profile.gpus_reason +
                "); gpu.* edits need a profile measured on a GPU node");
  std::vector<GpuProfile>& gpus = s.profile.gpus;
  if (t.field == "tflops")
    return {[&gpus] { return gpus.front().bf16_tflops.median; },
            [&gpus](double f) {
              for (GpuProfile& g : gpus) {
                scale(g.bf16_tflops, f);
                scale(g.all_bf16_tflops, f);
                for (GemmFigure& gemm : g.gemm) scale(gemm.tflops, f);
              }
            },
            {}};
  if (t.field == "pcie_gbps")
    return {[&gpus] { return gpus.front().h2d_gbps.median; },
            [&gpus](double f) {
              for (GpuProfile& g : gpus)
                for (Measurement* m :
                     {&g.h2d_gbps, &g.d2h_gbps, &g.bidirectional_gbps, &g.all_h2d_gbps, &g.all_d2h_gbps})
                  scale(*m, f);
            },
            {}};
  auto set = [&gpus](double v) {
    for (GpuProfile& g : gpus) g.memory_bytes = static_cast<std::int64_t>(v);
  };
  return {[&gpus] { return static_cast<double>(gpus.front().memory_bytes); },
          [&gpus, set](double f) { set(static_cast<double>(gpus.front().memory_bytes) * f); }, set};
}

Figure comm_figure(Scenario& s, const std::string& edit, const TargetParts& t) {
  CommProfile& c = s.profile.comm;
  CollectiveRates& path = t.name == "host_mpi" ? c.host_mpi : t.name == "nccl" ? c.nccl : c.inter_node;
  const std::string name = t.name;
  auto absent = [edit, name] {
    throw Error("--what-if " + edit + ": the profile has no comm." + name + " figures; give them with comm." +
                name + ".gbps=VALUE first (and comm." + name + ".latency_us=VALUE)");
  };
  if (t.field == "gbps")
    return {[&path, absent] {
              if (!path.measured) absent();
              return path.all_gather_gbps.median;
            },
            [&path](double f) {
              scale(path.all_gather_gbps, f);
              scale(path.reduce_scatter_gbps, f);
            },
            [&path](double v) {
              if (!path.measured) {  // a path given here, as a user gives it in the profile
                path = CollectiveRates{};
                path.measured = true;
                path.all_gather_gbps = path.reduce_scatter_gbps = Measurement{v, v, v, 0, 0};
                return;
              }
              const double f = v / path.all_gather_gbps.median;
              scale(path.all_gather_gbps, f);
              scale(path.reduce_scatter_gbps, f);
            }};
  return {[&path, absent] {
            if (!path.measured) absent();
            return path.latency_us.median;
          },
          [&path](double f) { scale(path.latency_us, f); },
          [&path, absent](double v) {
            if (!path.measured) absent();
            path.latency_us = Measurement{v, v, v, 0, 0};
          }};
}

Figure shape_figure(Scenario& s, const std::string& edit, const std::string& field) {
  std::int64_t& v = field == "nodes"           ? s.shape.nodes
                    : field == "gpus_per_node" ? s.shape.ranks_per_node
                    : field == "micro_batch"   ? s.shape.micro_batch
                    : field == "grad_accum"    ? s.shape.grad_accum
                                               : s.shape.seq_len;
  auto set = [&v, edit](double x) {
    if (x < 1 || x > double(1 << 20) || std::floor(x) != x)
      throw Error("--what-if " + edit + ": must give a whole number in [1, 1048576]");
    v = static_cast<std::int64_t>(x);
  };
  return {[&v, edit, field] {
            if (v == 0)
              throw Error("--what-if " + edit + ": " + field + " is the model's default; set it with " +
                          field + "=N");
            return static_cast<double>(v);
          },
          [&v, set](double f) { set(std::round(static_cast<double>(v) * f)); }, set};
}

Figure figure_of(Scenario& s, const std::string& edit, const std::string& target) {
  const TargetParts t = split_target(edit, target);
  unit_of(edit, t);
  if (t.family == "tier") return tier_figure(s, edit, t);
  if (t.family == "host") return host_figure(s, edit, t);
  if (t.family == "gpu") return gpu_figure(s, edit, t);
  if (t.family == "comm") return comm_figure(s, edit, t);
  if (t.family == "remote_backbone_gbps") {
    double& b = s.remote_backbone_gbps;
    return {[&b, edit] {
              if (b <= 0)
                throw Error("--what-if " + edit +
                            ": no backbone limit is set (--remote-backbone-gbps); set one with "
                            "remote_backbone_gbps=VALUE");
              return b;
            },
            [&b](double f) { b *= f; }, [&b](double v) { b = v; }};
  }
  return shape_figure(s, edit, t.family);
}

void add_tier(Scenario& s, const ScenarioEdit& e) {
  if (s.profile.find_tier(e.target) != nullptr)
    throw Error("--what-if " + e.text + ": the profile already has a tier '" + e.target +
                "'; pick a new name");
  TierProfile copy = tier_named(s, e.text, e.like);
  copy.name = e.target;
  if (!e.path.empty())
    copy.path = e.path;
  else if (!copy.path.empty())
    copy.path += "/" + e.target;
  s.profile.tiers.push_back(std::move(copy));
}

void remove_tier(Scenario& s, const ScenarioEdit& e) {
  tier_named(s, e.text, e.target);
  if (s.profile.tiers.size() == 1)
    throw Error("--what-if " + e.text + ": it is the profile's only tier; a plan needs one");
  s.profile.tiers.erase(std::remove_if(s.profile.tiers.begin(), s.profile.tiers.end(),
                                       [&](const TierProfile& t) { return t.name == e.target; }),
                        s.profile.tiers.end());
}

ScenarioEdit parse_tier_change(const std::string& text) {
  ScenarioEdit e;
  e.text = text;
  const std::string rest = text.substr(6);
  if (text.rfind("tier-=", 0) == 0) {
    e.kind = ScenarioEdit::Kind::remove_tier;
    e.target = rest;
    if (rest.empty()) throw Error("--what-if " + text + ": name the tier to remove, e.g. tier-=sata");
    return e;
  }
  e.kind = ScenarioEdit::Kind::add_tier;
  const std::size_t colon = rest.find(":like=");
  if (colon == std::string::npos || colon == 0)
    throw Error("--what-if " + text +
                ": expected tier+=NAME:like=TIER[,path=DIR], e.g. tier+=nvme2:like=nvme");
  e.target = rest.substr(0, colon);
  std::string like = rest.substr(colon + 6);
  if (const std::size_t comma = like.find(",path="); comma != std::string::npos) {
    e.path = like.substr(comma + 6);
    like = like.substr(0, comma);
    if (e.path.empty()) throw Error("--what-if " + text + ": path= needs a directory");
  }
  if (like.empty()) throw Error("--what-if " + text + ": like= needs the name of a tier to copy");
  e.like = like;
  return e;
}

}  // namespace

const std::vector<EditTarget>& edit_targets() {
  static const std::vector<EditTarget> targets = {
      {"tier.NAME.read_gbps", "GB/s", "the tier's read curves (alone, mixed, every I/O setting)"},
      {"tier.NAME.write_gbps", "GB/s", "the tier's write curves"},
      {"tier.NAME.gbps", "GB/s (read's peak)", "both directions by one factor"},
      {"tier.NAME.capacity", "bytes (512GiB)", "its size; what is used stays used"},
      {"tier.NAME.free", "bytes", "the space plans may take"},
      {"tier.NAME.latency_us", "us", "first-byte latency"},
      {"host.memory", "bytes", "RAM per node (available memory moves with it)"},
      {"host.available", "bytes", "RAM plans may use per node"},
      {"host.memcpy_gbps", "GB/s", "host memory bandwidth (all threads; one thread scales alike)"},
      {"host.adam", "elements/s (peak)", "CPU AdamW, with and without integrity, and CRC32C"},
      {"host.compute", "GFLOP/s", "the CPU backend's forward/backward and GEMM"},
      {"gpu.tflops", "TFLOP/s", "GPU bf16 compute (every GEMM shape)"},
      {"gpu.pcie_gbps", "GB/s (host-to-device)", "PCIe in both directions"},
      {"gpu.memory", "bytes", "memory per GPU"},
      {"comm.PATH.gbps", "GB/s (bus, all-gather)",
       "PATH: host_mpi, nccl, inter_node; all-gather and "
       "reduce-scatter; = on an absent path adds it"},
      {"comm.PATH.latency_us", "us", "per collective"},
      {"nodes", "count", "nodes in the cluster"},
      {"gpus_per_node", "count", "ranks per node"},
      {"micro_batch", "count", "sequences per rank per micro-step"},
      {"grad_accum", "count", "gradient accumulation steps"},
      {"seq_len", "count", "sequence length"},
      {"remote_backbone_gbps", "GB/s", "cluster-wide limit of the remote tiers per direction"},
      {"tier+=NAME:like=TIER[,path=DIR]", "", "adds a copy of TIER (another drive like it)"},
      {"tier-=NAME", "", "removes a tier"},
  };
  return targets;
}

ScenarioEdit parse_edit(const std::string& text) {
  if (text.rfind("tier+=", 0) == 0 || text.rfind("tier-=", 0) == 0) return parse_tier_change(text);
  const std::size_t op = text.find_first_of("=*");
  if (op == std::string::npos || op == 0 || op + 1 == text.size())
    throw Error("--what-if " + text +
                ": expected TARGET=VALUE or TARGET*FACTOR, e.g. tier.nvme.read_gbps*2 or host.memory=512GiB");
  ScenarioEdit e;
  e.text = text;
  e.target = text.substr(0, op);
  e.kind = text[op] == '=' ? ScenarioEdit::Kind::set : ScenarioEdit::Kind::scale;
  const std::string value = text.substr(op + 1);
  const Unit unit = unit_of(text, split_target(text, e.target));
  if (e.kind == ScenarioEdit::Kind::scale) {
    e.value = parse_number(text, value);
    if (e.value <= 0) throw Error("--what-if " + text + ": the factor must be > 0");
  } else if (unit == Unit::bytes) {
    if (!std::isalpha(static_cast<unsigned char>(value.back())))
      throw Error("--what-if " + text + ": give the size with a unit, e.g. " + e.target + "=512GiB");
    e.value = static_cast<double>(parse_bytes(value, "--what-if " + text));
  } else {
    e.value = parse_number(text, value);
    if (e.value < 0) throw Error("--what-if " + text + ": must be >= 0");
  }
  return e;
}

void apply(const ScenarioEdit& e, Scenario& s) {
  if (e.kind == ScenarioEdit::Kind::add_tier) return add_tier(s, e);
  if (e.kind == ScenarioEdit::Kind::remove_tier) return remove_tier(s, e);
  const Figure f = figure_of(s, e.text, e.target);
  if (e.kind == ScenarioEdit::Kind::scale) {
    f.get();  // a figure the scenario lacks says so
    f.scale_by(e.value);
    return;
  }
  if (f.set) return f.set(e.value);
  const double now = f.get();
  if (now <= 0)
    throw Error("--what-if " + e.text + ": the profile has no value for " + e.target +
                " to scale to the new one; it was not measured");
  if (e.value <= 0) throw Error("--what-if " + e.text + ": a rate must be > 0");
  f.scale_by(e.value / now);
}

double current_value(const Scenario& s, const std::string& target) {
  Scenario copy = s;
  return figure_of(copy, target, target).get();
}

}  // namespace mlpo::tune
