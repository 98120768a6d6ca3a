#include "core/profile.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/internal/json_fields.hpp"

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

// A measured figure: required, or optional and then written only when measured (median > 0).
template <class S>
JsonField<S> measurement_field(const char* key, Measurement S::*member, bool required, const char* doc) {
  auto read = [=](JsonObject& o, S& s) {
    if (required || o.optional(key)) s.*member = read_measurement(o, key);
  };
  auto write = [=](const S& s, Json& j) {
    if (required || (s.*member).median > 0) j[key] = to_json(s.*member);
  };
  return custom_field<S>(key, required ? "measurement" : "measurement, optional",
                         required ? "" : "not measured", doc, read, write);
}

// A curve over `count_key` (streams, threads): required, or optional and then written only when
// it has points.
template <class S>
JsonField<S> curve_field(const char* key, std::vector<CurvePoint> S::*member, const char* count_key,
                         bool required, const char* doc) {
  auto read = [=](JsonObject& o, S& s) {
    if (required || o.optional(key)) s.*member = read_curve(o, key, count_key);
  };
  auto write = [=](const S& s, Json& j) {
    if (required || !(s.*member).empty()) j[key] = curve_json(s.*member, count_key);
  };
  return custom_field<S>(key, std::string("curve over ") + count_key + (required ? "" : ", optional"),
                         required ? "" : "[]", doc, read, write);
}

const JsonFields<ModelComputeFigures>& model_compute_fields() {
  using F = ModelComputeFigures;
  static const JsonFields<F> fields{
      string_field("model", &F::model, Presence::required, "the preset or file whose widths were run"),
      int_field("micro_batch", &F::micro_batch, 1, 1 << 30, "sequences per micro-batch"),
      int_field("seq_len", &F::seq_len, 1, 1 << 30, "tokens per sequence"),
      int_field("threads", &F::threads, 0, 1 << 20, 0, "the backend's threads"),
      measurement_field("layer_forward_gflops", &F::layer_forward_gflops, true, "a layer's forward"),
      measurement_field("layer_backward_gflops", &F::layer_backward_gflops, true, "a layer's backward"),
      measurement_field("head_forward_gflops", &F::head_forward_gflops, true, "the head's forward"),
      measurement_field("head_backward_gflops", &F::head_backward_gflops, true, "the head's backward")};
  return fields;
}

// The CPU backend's forward/backward figures: optional, written when measured.
JsonField<HostProfile> model_compute_field(const char* key, ModelComputeFigures HostProfile::*member,
                                           const char* doc) {
  auto read = [=](JsonObject& o, HostProfile& h) {
    if (!o.optional(key)) return;
    JsonObject sub = o.object(key);
    read_fields(model_compute_fields(), sub, h.*member);
    sub.finish();
  };
  auto write = [=](const HostProfile& h, Json& j) {
    if (!(h.*member).measured()) return;
    Json sub = Json::object();
    write_fields(model_compute_fields(), h.*member, sub);
    j[key] = sub;
  };
  return custom_field<HostProfile>(key, "object, optional", "not measured", doc, read, write);
}

JsonField<HostProfile> available_bytes_field() {
  auto read = [](JsonObject& o, HostProfile& h) {
    h.available_bytes = o.integer_or("available_bytes", 0, INT64_MAX, h.memory_bytes);
    if (h.available_bytes > h.memory_bytes) o.fail("available_bytes", "must not exceed memory_bytes");
  };
  auto write = [](const HostProfile& h, Json& j) { j["available_bytes"] = h.available_bytes; };
  return custom_field<HostProfile>("available_bytes", "int <= memory_bytes", "memory_bytes", "available RAM",
                                   read, write);
}

JsonField<HostProfile> cpu_steal_field() {
  auto read = [](JsonObject& o, HostProfile& h) {
    if (o.optional("cpu_steal")) h.cpu_steal = o.number("cpu_steal", 0, 1);
  };
  auto write = [](const HostProfile& h, Json& j) {
    if (h.cpu_steal) j["cpu_steal"] = *h.cpu_steal;
  };
  return custom_field<HostProfile>("cpu_steal", "number 0..1, optional", "none",
                                   "the share of CPU time the hypervisor took", read, write);
}

const JsonFields<HostProfile>& host_fields() {
  using H = HostProfile;
  static const JsonFields<H> fields{
      int_field("cores", &H::cores, 1, 1 << 20, "logical CPUs"),
      int_field("memory_bytes", &H::memory_bytes, 1, INT64_MAX, "total RAM"),
      available_bytes_field(),
      int_field("numa_nodes", &H::numa_nodes, 1, 1 << 16, 1, "NUMA nodes"),
      measurement_field("memcpy_gbps_single", &H::memcpy_gbps_single, true, "memcpy GB/s, one thread"),
      measurement_field("memcpy_gbps", &H::memcpy_gbps, true, "memcpy GB/s, all threads"),
      curve_field("adam_elements_per_s", &H::adam_elements_per_s, "threads", true, "fused AdamW elements/s"),
      bool_field("adam_estimated", &H::adam_estimated, false, "the Adam figure is an estimate"),
      curve_field("adam_checked_elements_per_s", &H::adam_checked_elements_per_s, "threads", false,
                  "AdamW with integrity on, elements/s"),
      measurement_field("bf16_convert_gbps", &H::bf16_convert_gbps, false, "fp32 to bf16, GB/s of fp32"),
      measurement_field("bf16_to_fp32_gbps", &H::bf16_to_fp32_gbps, false, "bf16 to fp32, GB/s of fp32"),
      measurement_field("cpu_gemm_gflops", &H::cpu_gemm_gflops, false, "CPU backend GEMM"),
      measurement_field("crc32c_gbps", &H::crc32c_gbps, false, "CRC32C in cache, one thread"),
      measurement_field("grad_norm_elements_per_s", &H::grad_norm_elements_per_s, false,
                        "the gradient norm's pass, elements/s"),
      measurement_field("pool_dispatch_s", &H::pool_dispatch_s, false, "one parallel_for's wake-up and join"),
      measurement_field("thread_start_s", &H::thread_start_s, false, "one thread started and joined"),
      cpu_steal_field(),
      model_compute_field("cpu_model", &H::cpu_model, "the CPU backend's forward/backward per part"),
      model_compute_field("cpu_model_one_thread", &H::cpu_model_one_thread, "as cpu_model, on one thread")};
  return fields;
}

const JsonFields<GpuProfile>& gpu_fields() {
  using G = GpuProfile;
  static const JsonFields<GemmFigure> gemm_fields{
      string_field("name", &GemmFigure::name, Presence::required, "qkv, out_proj, mlp_up or mlp_down"),
      int_field("m", &GemmFigure::m, 1, INT64_MAX, "rows of out"),
      int_field("n", &GemmFigure::n, 1, INT64_MAX, "columns of out"),
      int_field("k", &GemmFigure::k, 1, INT64_MAX, "the inner dimension"),
      measurement_field("tflops", &GemmFigure::tflops, true, "TFLOP/s")};
  static const JsonFields<G> fields{
      string_field("model", &G::model, Presence::required, "the GPU's name"),
      int_field("count", &G::count, 1, 1 << 16, "GPUs of this model"),
      int_field("memory_bytes", &G::memory_bytes, 1, INT64_MAX, "device memory"),
      int_field("sm_count", &G::sm_count, 0, 1 << 20, 0, "streaming multiprocessors"),
      measurement_field("bf16_tflops", &G::bf16_tflops, true, "the layer GEMMs' aggregate"),
      measurement_field("hbm_gbps", &G::hbm_gbps, true, "device memory GB/s"),
      measurement_field("h2d_gbps", &G::h2d_gbps, true, "host to device GB/s"),
      measurement_field("d2h_gbps", &G::d2h_gbps, true, "device to host GB/s"),
      measurement_field("bidirectional_gbps", &G::bidirectional_gbps, true, "both directions at once"),
      array_field("gemm", &G::gemm, Presence::optional_written_when_set, gemm_fields, "per layer GEMM shape"),
      measurement_field("all_bf16_tflops", &G::all_bf16_tflops, false, "all GPUs at once"),
      measurement_field("all_h2d_gbps", &G::all_h2d_gbps, false, "all GPUs at once"),
      measurement_field("all_d2h_gbps", &G::all_d2h_gbps, false, "all GPUs at once")};
  return fields;
}

JsonField<TierIoSetting> io_block_size_field() {
  auto read = [](JsonObject& o, TierIoSetting& s) {
    s.block_size = o.integer_or("block_size", kIoBlockAlign, kMaxIoBlockSize, kDefaultIoBlockSize);
    if (s.block_size % kIoBlockAlign != 0) o.fail("block_size", "must be a multiple of 4096");
  };
  auto write = [](const TierIoSetting& s, Json& j) { j["block_size"] = s.block_size; };
  return custom_field<TierIoSetting>("block_size", "int, multiple of 4096", "1 MiB",
                                     "I/O request size the curves were measured with", read, write);
}

// mixed_read_gbps and mixed_write_gbps come together, with the same points.
JsonField<TierIoSetting> mixed_curves_field() {
  auto read = [](JsonObject& t, TierIoSetting& s) {
    const bool mixed_read = t.optional("mixed_read_gbps");
    const bool mixed_write = t.optional("mixed_write_gbps");
    if (mixed_read != mixed_write)
      t.fail(mixed_read ? "mixed_write_gbps" : "mixed_read_gbps",
             "missing (mixed_read_gbps and mixed_write_gbps come together; give both or neither)");
    if (!mixed_read) return;
    s.mixed_read_gbps = read_curve(t, "mixed_read_gbps", "streams");
    s.mixed_write_gbps = read_curve(t, "mixed_write_gbps", "streams");
    bool same_points = s.mixed_read_gbps.size() == s.mixed_write_gbps.size();
    for (std::size_t k = 0; same_points && k < s.mixed_read_gbps.size(); ++k)
      same_points = s.mixed_read_gbps[k].streams == s.mixed_write_gbps[k].streams;
    if (!same_points) t.fail("mixed_write_gbps", "must have the same streams points as mixed_read_gbps");
  };
  auto write = [](const TierIoSetting& s, Json& j) {
    if (s.mixed_read_gbps.empty()) return;
    j["mixed_read_gbps"] = curve_json(s.mixed_read_gbps, "streams");
    j["mixed_write_gbps"] = curve_json(s.mixed_write_gbps, "streams");
  };
  return custom_field<TierIoSetting>("mixed_read_gbps, mixed_write_gbps",
                                     "curve over streams, optional (both or neither, same points)", "[]",
                                     "reads and writes in flight together", read, write);
}

// A tier's (or one of its io_settings') block size, queue depth and curves.
const JsonFields<TierIoSetting>& io_setting_fields() {
  using S = TierIoSetting;
  static const JsonFields<S> fields{
      io_block_size_field(),
      int_field("queue_depth", &S::queue_depth, 1, kMaxIoQueueDepth, kDefaultIoQueueDepth,
                "requests in flight per stream"),
      curve_field("read_gbps", &S::read_gbps, "streams", true, "aggregate read GB/s by streams"),
      curve_field("write_gbps", &S::write_gbps, "streams", true, "aggregate write GB/s by streams"),
      mixed_curves_field()};
  return fields;
}

// The tier's main I/O setting: its block size, queue depth and curves, as io_setting_fields.
TierIoSetting main_curves(const TierProfile& t) {
  return {t.block_size, t.queue_depth, t.read_gbps, t.write_gbps, t.mixed_read_gbps, t.mixed_write_gbps};
}

JsonField<TierProfile> main_io_setting_field() {
  auto read = [](JsonObject& o, TierProfile& t) {
    TierIoSetting s;
    read_fields(io_setting_fields(), o, s);
    t.use_curves(s);
  };
  auto write = [](const TierProfile& t, Json& j) { write_fields(io_setting_fields(), main_curves(t), j); };
  return custom_field<TierProfile>("block_size, queue_depth, read_gbps, write_gbps, mixed_*", "io setting",
                                   "", "the main curves and the I/O setting they were measured at", read,
                                   write);
}

JsonField<TierProfile> more_io_settings_field() {
  auto read = [](JsonObject& t, TierProfile& tp) {
    if (!t.optional("io_settings")) return;
    const Json& settings = t.array("io_settings");
    for (std::size_t k = 0; k < settings.size(); ++k) {
      JsonObject sj(settings[k], element_path(t.field("io_settings"), k));
      TierIoSetting s;
      read_fields(io_setting_fields(), sj, s);
      for (const IoSetting& measured : tp.measured_io_settings())
        if (measured == s.io_setting())
          sj.fail("block_size", "this block size and queue depth are measured twice on the tier");
      sj.finish();
      tp.io_settings.push_back(s);
    }
  };
  auto write = [](const TierProfile& t, Json& j) {
    if (t.io_settings.empty()) return;
    Json settings = Json::array();
    for (const TierIoSetting& s : t.io_settings) {
      Json sj = Json::object();
      write_fields(io_setting_fields(), s, sj);
      settings.push_back(sj);
    }
    j["io_settings"] = settings;
  };
  return custom_field<TierProfile>("io_settings", "array, optional", "[]",
                                   "the curves at more I/O settings, each as the main ones", read, write);
}

JsonField<TierProfile> update_interference_field() {
  auto read = [](JsonObject& t, TierProfile& tp) {
    if (!t.optional("update_interference")) return;
    JsonObject u = t.object("update_interference");
    tp.io_ratio_adam_busy = u.number("io_ratio", 1e-3, 10);
    tp.adam_ratio_io_busy = u.number("adam_ratio", 1e-3, 10);
    if (u.optional("slot_handoff_us")) tp.slot_handoff_us = u.number("slot_handoff_us", 0, 1e6);
    if (u.optional("slot_handoff_waits_adam"))
      tp.slot_handoff_waits_adam = u.number("slot_handoff_waits_adam", 0, 1);
    u.finish();
  };
  auto write = [](const TierProfile& t, Json& j) {
    if (t.io_ratio_adam_busy <= 0 || t.adam_ratio_io_busy <= 0) return;
    Json u{{"io_ratio", t.io_ratio_adam_busy}, {"adam_ratio", t.adam_ratio_io_busy}};
    if (t.slot_handoff_us > 0 || t.slot_handoff_waits_adam > 0) {
      u["slot_handoff_us"] = t.slot_handoff_us;
      u["slot_handoff_waits_adam"] = t.slot_handoff_waits_adam;
    }
    j["update_interference"] = u;
  };
  return custom_field<TierProfile>("update_interference", "object, optional", "not measured",
                                   "{io_ratio, adam_ratio, slot_handoff_us, slot_handoff_waits_adam}", read,
                                   write);
}

// Every key of a tier but its name, which the tiers' reader checks against the others'.
const JsonFields<TierProfile>& tier_fields() {
  using T = TierProfile;
  auto read_path = [](JsonObject& o, T& t) {
    t.path = o.string_or("path", "");
    if (t.kind != TierKind::memory && t.path.empty())
      o.fail("path", "missing (required for a " + std::string(to_string(t.kind)) + " tier)");
  };
  auto write_path = [](const T& t, Json& j) {
    if (!t.path.empty()) j["path"] = t.path;
  };
  auto read_free = [](JsonObject& o, T& t) {
    t.free_bytes = o.integer("free_bytes", 0, INT64_MAX);
    if (t.free_bytes > t.capacity_bytes) o.fail("free_bytes", "must not exceed capacity_bytes");
  };
  auto write_free = [](const T& t, Json& j) { j["free_bytes"] = t.free_bytes; };
  static const JsonFields<T> fields{
      parsed_field("kind", &T::kind, parse_tier_kind, static_cast<const char* (*)(TierKind)>(to_string),
                   "memory | host | nvme | remote | other", "what backs the tier"),
      custom_field<T>("path", "string", "", "directory (required unless memory)", read_path, write_path),
      int_field("capacity_bytes", &T::capacity_bytes, 0, INT64_MAX, "file-system size"),
      custom_field<T>("free_bytes", "int <= capacity_bytes", "", "free space", read_free, write_free),
      main_io_setting_field(),
      bool_field("direct_io", &T::direct_io, true, "O_DIRECT used"),
      more_io_settings_field(),
      measurement_field("latency_us", &T::latency_us, false, "first-byte latency of one block read"),
      update_interference_field()};
  return fields;
}

JsonField<Profile> tiers_field() {
  auto read = [](JsonObject& root, Profile& p) {
    const Json& tiers = root.array("tiers");
    std::set<std::string> names;
    for (std::size_t i = 0; i < tiers.size(); ++i) {
      JsonObject t(tiers[i], element_path("tiers", i));
      TierProfile tp;
      tp.name = t.string("name");
      if (tp.name.empty()) t.fail("name", "must not be empty");
      if (!names.insert(tp.name).second)
        t.fail("name", "duplicate tier name '" + tp.name + "' (tier names must be unique)");
      read_fields(tier_fields(), t, tp);
      t.finish();
      p.tiers.push_back(tp);
    }
  };
  auto write = [](const Profile& p, Json& j) {
    Json tiers = Json::array();
    for (const TierProfile& t : p.tiers) {
      Json tj{{"name", t.name}};
      write_fields(tier_fields(), t, tj);
      tiers.push_back(tj);
    }
    j["tiers"] = tiers;
  };
  return custom_field<Profile>("tiers", "array", "", "one per storage tier, unique name", read, write);
}

JsonField<Profile> comm_field() {
  auto write = [](const Profile& p, Json& j) {
    Json comm = Json::object();
    write_collective(comm, "host_mpi", p.comm.host_mpi);
    write_collective(comm, "nccl", p.comm.nccl);
    write_collective(comm, "inter_node", p.comm.inter_node);
    if (!comm.empty()) j["comm"] = comm;
  };
  return custom_field<Profile>(
      "comm", "object, optional", "none", "collective rates by path: host_mpi, nccl, inter_node",
      [](JsonObject& root, Profile& p) { p.comm = read_comm(root); }, write);
}

const JsonFields<Profile>& profile_fields() {
  static const JsonFields<Profile> fields{
      string_field("hostname", &Profile::hostname, Presence::optional, "where it was measured"),
      string_field("measured_at", &Profile::measured_at, Presence::optional, "when (ISO 8601)"),
      string_field("notes", &Profile::notes, Presence::optional_written_when_set, "free text"),
      object_field("host", &Profile::host, host_fields(), "memory, CPU and the AdamW kernel"),
      array_field("gpus", &Profile::gpus, Presence::required, gpu_fields(), "the GPUs, one entry per model"),
      string_field("gpus_reason", &Profile::gpus_reason, Presence::optional_written_when_set,
                   "why gpus is empty"),
      comm_field(),
      tiers_field()};
  return fields;
}

}  // namespace

Profile profile_from_json(const Json& json) {
  return read_document(json, "mlpo.profile/1", profile_fields());
}

Json to_json(const Profile& p) {
  Json j{{"schema", "mlpo.profile/1"}};
  write_fields(profile_fields(), p, j);
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
