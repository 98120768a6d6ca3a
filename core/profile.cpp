#include "core/profile.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace mlpo {

namespace {

constexpr double kHuge = 1e18;

Measurement read_measurement(JsonObject& parent, const char* key, bool allow_zero = false) {
  const Json& j = parent.raw(key);
  Measurement m;
  if (j.is_number()) {
    double v = parent.number(key, 0.0, kHuge);
    if (!allow_zero && v <= 0) parent.fail(key, "must be > 0");
    m.median = m.min = m.max = v;
    return m;
  }
  JsonObject o(j, parent.field(key));
  m.median = o.number("median", 0, kHuge);
  if (!allow_zero && m.median <= 0) o.fail("median", "must be > 0");
  m.min = o.number_or("min", 0, kHuge, m.median);
  m.max = o.number_or("max", 0, kHuge, m.median);
  if (m.min > m.median || m.median > m.max) o.fail("median", "must lie between min and max");
  m.repetitions = o.integer_or("repetitions", 0, 1 << 30, 0);
  m.size_bytes = o.integer_or("size_bytes", 0, INT64_MAX, 0);
  o.finish();
  return m;
}

std::vector<CurvePoint> read_curve(JsonObject& parent, const char* key, const char* count_key) {
  const Json& arr = parent.array(key);
  if (arr.empty()) parent.fail(key, "must have at least one point");
  std::vector<CurvePoint> points;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonObject o(arr[i], element_path(parent.field(key), i));
    CurvePoint p;
    p.streams = o.integer(count_key, 1, 1 << 20);
    p.value = read_measurement(o, "value");
    o.finish();
    if (!points.empty() && p.streams <= points.back().streams)
      o.fail(count_key, "points must be in increasing order of " + std::string(count_key));
    points.push_back(p);
  }
  return points;
}

Json curve_json(const std::vector<CurvePoint>& points, const char* count_key) {
  Json arr = Json::array();
  for (const auto& p : points) arr.push_back(Json{{count_key, p.streams}, {"value", to_json(p.value)}});
  return arr;
}

CollectiveRates read_collective(JsonObject& parent, const char* key) {
  if (!parent.optional(key)) return {};
  return collective_rates_from_json(parent.raw(key), parent.field(key));
}

CommProfile read_comm(JsonObject& root) {
  CommProfile c;
  if (!root.optional("comm")) return c;
  JsonObject o = root.object("comm");
  c.host_mpi = read_collective(o, "host_mpi");
  c.nccl = read_collective(o, "nccl");
  c.inter_node = read_collective(o, "inter_node");
  o.finish();
  return c;
}

ModelComputeFigures read_model_compute(JsonObject& parent, const char* key) {
  if (!parent.optional(key)) return {};
  JsonObject o = parent.object(key);
  ModelComputeFigures f;
  f.model = o.string("model");
  f.micro_batch = o.integer("micro_batch", 1, 1 << 30);
  f.seq_len = o.integer("seq_len", 1, 1 << 30);
  f.threads = o.integer_or("threads", 0, 1 << 20, 0);
  f.layer_forward_gflops = read_measurement(o, "layer_forward_gflops");
  f.layer_backward_gflops = read_measurement(o, "layer_backward_gflops");
  f.head_forward_gflops = read_measurement(o, "head_forward_gflops");
  f.head_backward_gflops = read_measurement(o, "head_backward_gflops");
  o.finish();
  return f;
}

Json model_compute_json(const ModelComputeFigures& f) {
  return Json{{"model", f.model},
              {"micro_batch", f.micro_batch},
              {"seq_len", f.seq_len},
              {"threads", f.threads},
              {"layer_forward_gflops", to_json(f.layer_forward_gflops)},
              {"layer_backward_gflops", to_json(f.layer_backward_gflops)},
              {"head_forward_gflops", to_json(f.head_forward_gflops)},
              {"head_backward_gflops", to_json(f.head_backward_gflops)}};
}

void write_collective(Json& parent, const char* key, const CollectiveRates& c) {
  if (c.measured) parent[key] = to_json(c);
}

}  // namespace

double interpolate(const std::vector<CurvePoint>& points, double streams) {
  if (points.empty()) return 0;
  if (streams <= static_cast<double>(points.front().streams)) return points.front().value.median;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto& a = points[i - 1];
    const auto& b = points[i];
    if (streams <= static_cast<double>(b.streams)) {
      double t = (streams - static_cast<double>(a.streams)) / static_cast<double>(b.streams - a.streams);
      return a.value.median + t * (b.value.median - a.value.median);
    }
  }
  return points.back().value.median;
}

Json to_json(const Measurement& m) {
  return Json{{"median", m.median},
              {"min", m.min},
              {"max", m.max},
              {"repetitions", m.repetitions},
              {"size_bytes", m.size_bytes}};
}

std::optional<TierProfile> TierProfile::at_io_setting(const IoSetting& setting) const {
  if (setting == io_setting()) return *this;
  for (const TierIoSetting& s : io_settings) {
    if (s.io_setting() != setting) continue;
    TierProfile t = *this;
    t.use_curves(s);
    t.io_settings.clear();
    return t;
  }
  return std::nullopt;
}

void TierProfile::use_curves(const TierIoSetting& s) {
  block_size = s.block_size;
  queue_depth = s.queue_depth;
  read_gbps = s.read_gbps;
  write_gbps = s.write_gbps;
  mixed_read_gbps = s.mixed_read_gbps;
  mixed_write_gbps = s.mixed_write_gbps;
}

std::vector<IoSetting> TierProfile::measured_io_settings() const {
  std::vector<IoSetting> out{io_setting()};
  for (const TierIoSetting& s : io_settings) out.push_back(s.io_setting());
  return out;
}

const TierProfile* Profile::find_tier(const std::string& name) const {
  for (const auto& t : tiers)
    if (t.name == name) return &t;
  return nullptr;
}

std::int64_t Profile::gpu_count() const {
  std::int64_t n = 0;
  for (const GpuProfile& g : gpus) n += g.count;
  return n;
}

std::size_t Profile::tier_index(const std::string& name) const {
  const TierProfile* t = find_tier(name);
  return t ? static_cast<std::size_t>(t - tiers.data()) : tiers.size();
}

namespace {

// A tier's (or one of its io_settings') block size, queue depth and curves.
TierIoSetting read_io_setting(JsonObject& t) {
  TierIoSetting s;
  s.block_size = t.integer_or("block_size", 4096, std::int64_t{1} << 30, kDefaultIoBlockSize);
  if (s.block_size % 4096 != 0) t.fail("block_size", "must be a multiple of 4096");
  s.queue_depth = t.integer_or("queue_depth", 1, 4096, kDefaultIoQueueDepth);
  s.read_gbps = read_curve(t, "read_gbps", "streams");
  s.write_gbps = read_curve(t, "write_gbps", "streams");
  const bool mixed_read = t.optional("mixed_read_gbps");
  const bool mixed_write = t.optional("mixed_write_gbps");
  if (mixed_read != mixed_write)
    t.fail(mixed_read ? "mixed_write_gbps" : "mixed_read_gbps",
           "missing (mixed_read_gbps and mixed_write_gbps come together; give both or neither)");
  if (mixed_read) {
    s.mixed_read_gbps = read_curve(t, "mixed_read_gbps", "streams");
    s.mixed_write_gbps = read_curve(t, "mixed_write_gbps", "streams");
    bool same_points = s.mixed_read_gbps.size() == s.mixed_write_gbps.size();
    for (std::size_t k = 0; same_points && k < s.mixed_read_gbps.size(); ++k)
      same_points = s.mixed_read_gbps[k].streams == s.mixed_write_gbps[k].streams;
    if (!same_points) t.fail("mixed_write_gbps", "must have the same streams points as mixed_read_gbps");
  }
  return s;
}

Json io_setting_json(const TierIoSetting& s) {
  Json j{{"block_size", s.block_size},
         {"queue_depth", s.queue_depth},
         {"read_gbps", curve_json(s.read_gbps, "streams")},
         {"write_gbps", curve_json(s.write_gbps, "streams")}};
  if (!s.mixed_read_gbps.empty()) {
    j["mixed_read_gbps"] = curve_json(s.mixed_read_gbps, "streams");
    j["mixed_write_gbps"] = curve_json(s.mixed_write_gbps, "streams");
  }
  return j;
}

}  // namespace

Profile profile_from_json(const Json& json) {
  JsonObject root(json, "");
  root.expect_schema("mlpo.profile/1");
  Profile p;
  p.hostname = root.string_or("hostname", "");
  p.measured_at = root.string_or("measured_at", "");
  p.notes = root.string_or("notes", "");

  JsonObject h = root.object("host");
  p.host.cores = h.integer("cores", 1, 1 << 20);
  p.host.memory_bytes = h.integer("memory_bytes", 1, INT64_MAX);
  p.host.available_bytes = h.integer_or("available_bytes", 0, INT64_MAX, p.host.memory_bytes);
  if (p.host.available_bytes > p.host.memory_bytes) h.fail("available_bytes", "must not exceed memory_bytes");
  p.host.numa_nodes = h.integer_or("numa_nodes", 1, 1 << 16, 1);
  p.host.memcpy_gbps_single = read_measurement(h, "memcpy_gbps_single");
  p.host.memcpy_gbps = read_measurement(h, "memcpy_gbps");
  p.host.adam_elements_per_s = read_curve(h, "adam_elements_per_s", "threads");
  p.host.adam_estimated = h.boolean_or("adam_estimated", false);
  if (h.optional("adam_checked_elements_per_s"))
    p.host.adam_checked_elements_per_s = read_curve(h, "adam_checked_elements_per_s", "threads");
  if (h.optional("bf16_convert_gbps")) p.host.bf16_convert_gbps = read_measurement(h, "bf16_convert_gbps");
  if (h.optional("bf16_to_fp32_gbps")) p.host.bf16_to_fp32_gbps = read_measurement(h, "bf16_to_fp32_gbps");
  if (h.optional("cpu_gemm_gflops")) p.host.cpu_gemm_gflops = read_measurement(h, "cpu_gemm_gflops");
  if (h.optional("crc32c_gbps")) p.host.crc32c_gbps = read_measurement(h, "crc32c_gbps");
  if (h.optional("grad_norm_elements_per_s"))
    p.host.grad_norm_elements_per_s = read_measurement(h, "grad_norm_elements_per_s");
  if (h.optional("pool_dispatch_s")) p.host.pool_dispatch_s = read_measurement(h, "pool_dispatch_s");
  if (h.optional("thread_start_s")) p.host.thread_start_s = read_measurement(h, "thread_start_s");
  if (h.optional("cpu_steal")) p.host.cpu_steal = h.number("cpu_steal", 0, 1);
  p.host.cpu_model = read_model_compute(h, "cpu_model");
  p.host.cpu_model_one_thread = read_model_compute(h, "cpu_model_one_thread");
  h.finish();

  const Json& gpus = root.array("gpus");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    JsonObject g(gpus[i], element_path("gpus", i));
    GpuProfile gp;
    gp.model = g.string("model");
    gp.count = g.integer("count", 1, 1 << 16);
    gp.memory_bytes = g.integer("memory_bytes", 1, INT64_MAX);
    gp.sm_count = g.integer_or("sm_count", 0, 1 << 20, 0);
    gp.bf16_tflops = read_measurement(g, "bf16_tflops");
    gp.hbm_gbps = read_measurement(g, "hbm_gbps");
    gp.h2d_gbps = read_measurement(g, "h2d_gbps");
    gp.d2h_gbps = read_measurement(g, "d2h_gbps");
    gp.bidirectional_gbps = read_measurement(g, "bidirectional_gbps");
    if (g.optional("gemm")) {
      const Json& shapes = g.array("gemm");
      for (std::size_t s = 0; s < shapes.size(); ++s) {
        JsonObject o(shapes[s], element_path(g.field("gemm"), s));
        GemmFigure f;
        f.name = o.string("name");
        f.m = o.integer("m", 1, INT64_MAX);
        f.n = o.integer("n", 1, INT64_MAX);
        f.k = o.integer("k", 1, INT64_MAX);
        f.tflops = read_measurement(o, "tflops");
        o.finish();
        gp.gemm.push_back(f);
      }
    }
    if (g.optional("all_bf16_tflops")) gp.all_bf16_tflops = read_measurement(g, "all_bf16_tflops");
    if (g.optional("all_h2d_gbps")) gp.all_h2d_gbps = read_measurement(g, "all_h2d_gbps");
    if (g.optional("all_d2h_gbps")) gp.all_d2h_gbps = read_measurement(g, "all_d2h_gbps");
    g.finish();
    p.gpus.push_back(gp);
  }
  p.gpus_reason = root.string_or("gpus_reason", "");
  p.comm = read_comm(root);

  const Json& tiers = root.array("tiers");
  std::set<std::string> names;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    JsonObject t(tiers[i], element_path("tiers", i));
    TierProfile tp;
    tp.name = t.string("name");
    if (tp.name.empty()) t.fail("name", "must not be empty");
    if (!names.insert(tp.name).second)
      t.fail("name", "duplicate tier name '" + tp.name + "' (tier names must be unique)");
    tp.kind = parse_tier_kind(t.string("kind"), t.field("kind"));
    tp.path = t.string_or("path", "");
    if (tp.kind != TierKind::memory && tp.path.empty())
      t.fail("path", "missing (required for a " + std::string(to_string(tp.kind)) + " tier)");
    tp.capacity_bytes = t.integer("capacity_bytes", 0, INT64_MAX);
    tp.free_bytes = t.integer("free_bytes", 0, INT64_MAX);
    if (tp.free_bytes > tp.capacity_bytes) t.fail("free_bytes", "must not exceed capacity_bytes");
    tp.use_curves(read_io_setting(t));
    tp.direct_io = t.boolean_or("direct_io", true);
    if (t.optional("io_settings")) {
      const Json& settings = t.array("io_settings");
      for (std::size_t k = 0; k < settings.size(); ++k) {
        JsonObject sj(settings[k], element_path(t.field("io_settings"), k));
        const TierIoSetting s = read_io_setting(sj);
        for (const IoSetting& measured : tp.measured_io_settings())
          if (measured == s.io_setting())
            sj.fail("block_size", "this block size and queue depth are measured twice on the tier");
        sj.finish();
        tp.io_settings.push_back(s);
      }
    }
    if (t.optional("latency_us")) tp.latency_us = read_measurement(t, "latency_us");
    if (t.optional("update_interference")) {
      JsonObject u = t.object("update_interference");
      tp.io_ratio_adam_busy = u.number("io_ratio", 1e-3, 10);
      tp.adam_ratio_io_busy = u.number("adam_ratio", 1e-3, 10);
      if (u.optional("slot_handoff_us")) tp.slot_handoff_us = u.number("slot_handoff_us", 0, 1e6);
      if (u.optional("slot_handoff_waits_adam"))
        tp.slot_handoff_waits_adam = u.number("slot_handoff_waits_adam", 0, 1);
      u.finish();
    }
    t.finish();
    p.tiers.push_back(tp);
  }
  root.finish();
  return p;
}

Json to_json(const Profile& p) {
  Json host{{"cores", p.host.cores},
            {"memory_bytes", p.host.memory_bytes},
            {"available_bytes", p.host.available_bytes},
            {"numa_nodes", p.host.numa_nodes},
            {"memcpy_gbps_single", to_json(p.host.memcpy_gbps_single)},
            {"memcpy_gbps", to_json(p.host.memcpy_gbps)},
            {"adam_elements_per_s", curve_json(p.host.adam_elements_per_s, "threads")},
            {"adam_estimated", p.host.adam_estimated}};
  if (!p.host.adam_checked_elements_per_s.empty())
    host["adam_checked_elements_per_s"] = curve_json(p.host.adam_checked_elements_per_s, "threads");
  if (p.host.bf16_convert_gbps.median > 0) host["bf16_convert_gbps"] = to_json(p.host.bf16_convert_gbps);
  if (p.host.bf16_to_fp32_gbps.median > 0) host["bf16_to_fp32_gbps"] = to_json(p.host.bf16_to_fp32_gbps);
  if (p.host.cpu_gemm_gflops.median > 0) host["cpu_gemm_gflops"] = to_json(p.host.cpu_gemm_gflops);
  if (p.host.crc32c_gbps.median > 0) host["crc32c_gbps"] = to_json(p.host.crc32c_gbps);
  if (p.host.grad_norm_elements_per_s.median > 0)
    host["grad_norm_elements_per_s"] = to_json(p.host.grad_norm_elements_per_s);
  if (p.host.pool_dispatch_s.median > 0) host["pool_dispatch_s"] = to_json(p.host.pool_dispatch_s);
  if (p.host.thread_start_s.median > 0) host["thread_start_s"] = to_json(p.host.thread_start_s);
  if (p.host.cpu_steal) host["cpu_steal"] = *p.host.cpu_steal;
  if (p.host.cpu_model.measured()) host["cpu_model"] = model_compute_json(p.host.cpu_model);
  if (p.host.cpu_model_one_thread.measured())
    host["cpu_model_one_thread"] = model_compute_json(p.host.cpu_model_one_thread);
  Json gpus = Json::array();
  for (const auto& g : p.gpus) {
    Json gj{{"model", g.model},
            {"count", g.count},
            {"memory_bytes", g.memory_bytes},
            {"sm_count", g.sm_count},
            {"bf16_tflops", to_json(g.bf16_tflops)},
            {"hbm_gbps", to_json(g.hbm_gbps)},
            {"h2d_gbps", to_json(g.h2d_gbps)},
            {"d2h_gbps", to_json(g.d2h_gbps)},
            {"bidirectional_gbps", to_json(g.bidirectional_gbps)}};
    if (!g.gemm.empty()) {
      Json shapes = Json::array();
      for (const auto& f : g.gemm)
        shapes.push_back(
            Json{{"name", f.name}, {"m", f.m}, {"n", f.n}, {"k", f.k}, {"tflops", to_json(f.tflops)}});
      gj["gemm"] = shapes;
    }
    if (g.all_bf16_tflops.median > 0) gj["all_bf16_tflops"] = to_json(g.all_bf16_tflops);
    if (g.all_h2d_gbps.median > 0) gj["all_h2d_gbps"] = to_json(g.all_h2d_gbps);
    if (g.all_d2h_gbps.median > 0) gj["all_d2h_gbps"] = to_json(g.all_d2h_gbps);
    gpus.push_back(gj);
  }
  Json tiers = Json::array();
  for (const auto& t : p.tiers) {
    Json tj{{"name", t.name},
            {"kind", to_string(t.kind)},
            {"capacity_bytes", t.capacity_bytes},
            {"free_bytes", t.free_bytes},
            {"block_size", t.block_size},
            {"queue_depth", t.queue_depth},
            {"direct_io", t.direct_io},
            {"read_gbps", curve_json(t.read_gbps, "streams")},
            {"write_gbps", curve_json(t.write_gbps, "streams")}};
    if (t.has_mixed()) {
      tj["mixed_read_gbps"] = curve_json(t.mixed_read_gbps, "streams");
      tj["mixed_write_gbps"] = curve_json(t.mixed_write_gbps, "streams");
    }
    if (!t.path.empty()) tj["path"] = t.path;
    if (!t.io_settings.empty()) {
      Json settings = Json::array();
      for (const TierIoSetting& s : t.io_settings) settings.push_back(io_setting_json(s));
      tj["io_settings"] = settings;
    }
    if (t.latency_us.median > 0) tj["latency_us"] = to_json(t.latency_us);
    if (t.io_ratio_adam_busy > 0 && t.adam_ratio_io_busy > 0) {
      tj["update_interference"] =
          Json{{"io_ratio", t.io_ratio_adam_busy}, {"adam_ratio", t.adam_ratio_io_busy}};
      if (t.slot_handoff_us > 0 || t.slot_handoff_waits_adam > 0) {
        tj["update_interference"]["slot_handoff_us"] = t.slot_handoff_us;
        tj["update_interference"]["slot_handoff_waits_adam"] = t.slot_handoff_waits_adam;
      }
    }
    tiers.push_back(tj);
  }
  Json j{{"schema", "mlpo.profile/1"},
         {"hostname", p.hostname},
         {"measured_at", p.measured_at},
         {"host", host},
         {"gpus", gpus},
         {"tiers", tiers}};
  if (!p.notes.empty()) j["notes"] = p.notes;
  if (!p.gpus_reason.empty()) j["gpus_reason"] = p.gpus_reason;
  Json comm = Json::object();
  write_collective(comm, "host_mpi", p.comm.host_mpi);
  write_collective(comm, "nccl", p.comm.nccl);
  write_collective(comm, "inter_node", p.comm.inter_node);
  if (!comm.empty()) j["comm"] = comm;
  return j;
}

CollectiveRates collective_rates_from_json(const Json& json, const std::string& path) {
  JsonObject o(json, path);
  CollectiveRates c;
  c.measured = true;
  c.ranks = o.integer_or("ranks", 0, 1 << 20, 0);
  c.all_gather_gbps = read_measurement(o, "all_gather_gbps");
  c.reduce_scatter_gbps = read_measurement(o, "reduce_scatter_gbps");
  if (o.optional("latency_us")) c.latency_us = read_measurement(o, "latency_us", true);
  o.finish();
  return c;
}

Json to_json(const CollectiveRates& c) {
  Json j{{"all_gather_gbps", to_json(c.all_gather_gbps)},
         {"reduce_scatter_gbps", to_json(c.reduce_scatter_gbps)},
         {"latency_us", to_json(c.latency_us)}};
  if (c.ranks > 0) j["ranks"] = c.ranks;
  return j;
}

Profile load_profile(const std::string& path) {
  return load_json_file(path, "an mlpo.profile/1 profile (made by mlpo-profile)", profile_from_json);
}

std::string notes_from_elsewhere(const Profile& profile) {
  char host[256] = {};
  const bool here = ::gethostname(host, sizeof host - 1) == 0 && profile.hostname == host;
  return here ? std::string() : profile.notes;
}

}  // namespace mlpo
