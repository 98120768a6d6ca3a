#include "profiles/summary_table.hpp"

#include <cstdio>
#include <map>

#include "core/units.hpp"

namespace mlpo::profiles {

namespace {

std::string printf_string(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

std::string spread(const Measurement& m, const char* unit) {
  if (m.repetitions == 0) return printf_string("%.3f %s (given)", m.median, unit);
  return printf_string("%10.3f %s [%.3f..%.3f] x%lld", m.median, unit, m.min, m.max,
                       static_cast<long long>(m.repetitions));
}

// The same figure in other units (x factor).
Measurement scaled(Measurement m, double factor) {
  m.median *= factor, m.min *= factor, m.max *= factor;
  return m;
}

// A tier's write and read curves, then its read+write one when measured.
std::string curves_table(const std::vector<CurvePoint>& read, const std::vector<CurvePoint>& write,
                         const std::vector<CurvePoint>& mixed_read,
                         const std::vector<CurvePoint>& mixed_write) {
  std::string out = "  streams  write GB/s [min..max]          read GB/s [min..max]\n";
  const auto rows = [&out](const std::vector<CurvePoint>& r_curve, const std::vector<CurvePoint>& w_curve) {
    for (std::size_t i = 0; i < r_curve.size() && i < w_curve.size(); ++i) {
      const Measurement& w = w_curve[i].value;
      const Measurement& r = r_curve[i].value;
      out += printf_string("  %7lld  %8.3f [%.3f..%.3f]  %13.3f [%.3f..%.3f]\n",
                           static_cast<long long>(r_curve[i].streams), w.median, w.min, w.max, r.median,
                           r.min, r.max);
    }
  };
  rows(read, write);
  if (!mixed_read.empty()) {
    out += "  reads and writes at once (n streams of each):\n";
    out += "  streams  write GB/s [min..max]          read GB/s [min..max]\n";
    rows(mixed_read, mixed_write);
  }
  return out;
}

// One CPU forward/backward measurement, when it was made.
std::string cpu_model_lines(const ModelComputeFigures& m) {
  if (!m.measured()) return "";
  std::string out;
  out += printf_string("  CPU model (%s, %lld x %lld tokens, %lld threads)\n", m.model.c_str(),
                       static_cast<long long>(m.micro_batch), static_cast<long long>(m.seq_len),
                       static_cast<long long>(m.threads));
  out += "    layer forward         " + spread(m.layer_forward_gflops, "GFLOP/s") + "\n";
  out += "    layer backward        " + spread(m.layer_backward_gflops, "GFLOP/s") + "\n";
  out += "    head forward          " + spread(m.head_forward_gflops, "GFLOP/s") + "\n";
  out += "    head backward         " + spread(m.head_backward_gflops, "GFLOP/s") + "\n";
  return out;
}

// The host's figures: memory, AdamW, the passes around it, thread costs and the CPU backend.
std::string host_lines(const HostProfile& h) {
  std::string out;
  out += "  memcpy, 1 thread        " + spread(h.memcpy_gbps_single, "GB/s") + "\n";
  out += "  memcpy, all threads     " + spread(h.memcpy_gbps, "GB/s") + "\n";
  for (const CurvePoint& pt : h.adam_elements_per_s)
    out += printf_string(
        "  AdamW bf16-grad, %2lld thr %s\n", static_cast<long long>(pt.streams),
        spread(scaled(pt.value, 1e-9), h.adam_estimated ? "Gelem/s (estimated)" : "Gelem/s").c_str());
  for (const CurvePoint& pt : h.adam_checked_elements_per_s)
    out += printf_string("  AdamW + CRC32C,  %2lld thr %s\n", static_cast<long long>(pt.streams),
                         spread(scaled(pt.value, 1e-9), "Gelem/s").c_str());
  if (h.bf16_convert_gbps.median > 0)
    out += "  fp32 -> bf16            " + spread(h.bf16_convert_gbps, "GB/s") + "\n";
  if (h.bf16_to_fp32_gbps.median > 0)
    out += "  bf16 -> fp32            " + spread(h.bf16_to_fp32_gbps, "GB/s") + "\n";
  if (h.crc32c_gbps.median > 0) out += "  CRC32C, 1 thr, cached   " + spread(h.crc32c_gbps, "GB/s") + "\n";
  if (h.grad_norm_elements_per_s.median > 0)
    out += "  gradient norm (bf16)    " + spread(scaled(h.grad_norm_elements_per_s, 1e-9), "Gelem/s") + "\n";
  if (h.pool_dispatch_s.median > 0)
    out += "  thread pool wake+join   " + spread(scaled(h.pool_dispatch_s, 1e6), "us") + "\n";
  if (h.thread_start_s.median > 0)
    out += "  thread start+join       " + spread(scaled(h.thread_start_s, 1e6), "us") + "\n";
  if (h.cpu_gemm_gflops.median > 0)
    out += "  CPU GEMM (bf16)         " + spread(h.cpu_gemm_gflops, "GFLOP/s") + "\n";
  out += cpu_model_lines(h.cpu_model);
  out += cpu_model_lines(h.cpu_model_one_thread);
  if (h.cpu_steal)
    out += printf_string("  CPU time taken by the hypervisor (steal) while measuring: %.1f %%\n",
                         100 * *h.cpu_steal);
  return out;
}

// One GPU model's figures.
std::string gpu_lines(const GpuProfile& g) {
  std::string out;
  out += "gpu: " + std::to_string(g.count) + " x " + g.model + ", " +
         format_bytes(static_cast<double>(g.memory_bytes)) + ", " + std::to_string(g.sm_count) + " SMs\n";
  for (const GemmFigure& f : g.gemm)
    out += printf_string("  GEMM %-8s %6lldx%6lldx%6lld %s\n", f.name.c_str(), static_cast<long long>(f.m),
                         static_cast<long long>(f.n), static_cast<long long>(f.k),
                         spread(f.tflops, "TFLOP/s").c_str());
  out += "  bf16 GEMM, layer       " + spread(g.bf16_tflops, "TFLOP/s") + "\n";
  out += "  HBM (read+write)       " + spread(g.hbm_gbps, "GB/s") + "\n";
  out += "  H2D pinned             " + spread(g.h2d_gbps, "GB/s") + "\n";
  out += "  D2H pinned             " + spread(g.d2h_gbps, "GB/s") + "\n";
  out += "  H2D + D2H at once      " + spread(g.bidirectional_gbps, "GB/s") + "\n";
  if (g.all_bf16_tflops.median > 0)
    out += "  all GPUs: GEMM         " + spread(g.all_bf16_tflops, "TFLOP/s") + "\n";
  if (g.all_h2d_gbps.median > 0) out += "  all GPUs: H2D          " + spread(g.all_h2d_gbps, "GB/s") + "\n";
  if (g.all_d2h_gbps.median > 0) out += "  all GPUs: D2H          " + spread(g.all_d2h_gbps, "GB/s") + "\n";
  return out;
}

// One tier's curves, its other I/O settings' curves, latency and contention with AdamW.
std::string tier_lines(const TierProfile& t) {
  std::string out;
  out += "tier '" + t.name + "' (" + t.path + ", " + to_string(t.kind) +
         "): " + format_bytes(static_cast<double>(t.free_bytes)) + " free of " +
         format_bytes(static_cast<double>(t.capacity_bytes)) + ", bs " +
         format_bytes(static_cast<double>(t.block_size)) + ", qd " + std::to_string(t.queue_depth) + ", " +
         (t.direct_io ? "O_DIRECT" : "buffered") + "\n";
  out += curves_table(t.read_gbps, t.write_gbps, t.mixed_read_gbps, t.mixed_write_gbps);
  for (const TierIoSetting& io : t.io_settings) {
    out += "  at bs " + format_bytes(static_cast<double>(io.block_size)) + ", qd " +
           std::to_string(io.queue_depth) + ":\n";
    out += curves_table(io.read_gbps, io.write_gbps, io.mixed_read_gbps, io.mixed_write_gbps);
  }
  if (t.latency_us.median > 0)
    out += "  first-byte latency (4 KiB read) " + spread(t.latency_us, "us") + "\n";
  if (t.io_ratio_adam_busy > 0) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "  with AdamW on every core: read+write at %.2fx, AdamW at %.2fx of its rate alone\n",
                  t.io_ratio_adam_busy, t.adam_ratio_io_busy);
    out += line;
  }
  if (t.slot_handoff_us > 0 || t.slot_handoff_waits_adam > 0) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  slot handoff (reader and writer taking turns on one slot): %.0f us, plus %.0f %% of the "
                  "AdamW a read starts\n",
                  t.slot_handoff_us, 100 * t.slot_handoff_waits_adam);
    out += line;
  }
  return out;
}

}  // namespace

std::string summary_table(const Profile& p) {
  std::string out;
  out += "profile of " + p.hostname + " at " + p.measured_at + "\n";
  out += "host: " + std::to_string(p.host.cores) + " cores, " +
         format_bytes(static_cast<double>(p.host.memory_bytes)) + " memory (" +
         format_bytes(static_cast<double>(p.host.available_bytes)) + " available), " +
         std::to_string(p.host.numa_nodes) + " NUMA node(s)\n";
  out += host_lines(p.host);
  if (p.gpus.empty()) out += "gpus: none (" + p.gpus_reason + ")\n";
  for (const GpuProfile& g : p.gpus) out += gpu_lines(g);
  for (const TierProfile& t : p.tiers) out += tier_lines(t);
  if (const CollectiveRates& c = p.comm.host_mpi; c.measured)
    out += "host MPI collectives (" + std::to_string(c.ranks) + " ranks, bus bandwidth): all-gather " +
           spread(c.all_gather_gbps, "GB/s") + ", reduce-scatter " + spread(c.reduce_scatter_gbps, "GB/s") +
           ", latency " + spread(c.latency_us, "us") + "\n";
  return out;
}

std::vector<std::pair<std::string, double>> profile_figures(const Profile& p) {
  std::vector<std::pair<std::string, double>> f;
  auto add = [&](const std::string& label, const Measurement& m) {
    if (m.median > 0) f.emplace_back(label, m.median);
  };
  add("host.memcpy_gbps_single", p.host.memcpy_gbps_single);
  add("host.memcpy_gbps", p.host.memcpy_gbps);
  for (const CurvePoint& pt : p.host.adam_elements_per_s)
    add("host.adam_elements_per_s@" + std::to_string(pt.streams), pt.value);
  for (const CurvePoint& pt : p.host.adam_checked_elements_per_s)
    add("host.adam_checked_elements_per_s@" + std::to_string(pt.streams), pt.value);
  add("host.bf16_convert_gbps", p.host.bf16_convert_gbps);
  add("host.bf16_to_fp32_gbps", p.host.bf16_to_fp32_gbps);
  add("host.cpu_gemm_gflops", p.host.cpu_gemm_gflops);
  add("host.crc32c_gbps", p.host.crc32c_gbps);
  add("host.grad_norm_elements_per_s", p.host.grad_norm_elements_per_s);
  add("host.pool_dispatch_s", p.host.pool_dispatch_s);
  add("host.thread_start_s", p.host.thread_start_s);
  add("host.cpu_model.layer_forward_gflops", p.host.cpu_model.layer_forward_gflops);
  add("host.cpu_model.layer_backward_gflops", p.host.cpu_model.layer_backward_gflops);
  add("host.cpu_model.head_forward_gflops", p.host.cpu_model.head_forward_gflops);
  add("host.cpu_model.head_backward_gflops", p.host.cpu_model.head_backward_gflops);
  add("host.cpu_model_one_thread.layer_forward_gflops", p.host.cpu_model_one_thread.layer_forward_gflops);
  add("host.cpu_model_one_thread.layer_backward_gflops", p.host.cpu_model_one_thread.layer_backward_gflops);
  add("host.cpu_model_one_thread.head_forward_gflops", p.host.cpu_model_one_thread.head_forward_gflops);
  add("host.cpu_model_one_thread.head_backward_gflops", p.host.cpu_model_one_thread.head_backward_gflops);
  for (const GpuProfile& g : p.gpus) {
    const std::string at = "gpus[" + g.model + "].";
    for (const GemmFigure& s : g.gemm) add(at + "gemm." + s.name + "_tflops", s.tflops);
    add(at + "bf16_tflops", g.bf16_tflops);
    add(at + "hbm_gbps", g.hbm_gbps);
    add(at + "h2d_gbps", g.h2d_gbps);
    add(at + "d2h_gbps", g.d2h_gbps);
    add(at + "bidirectional_gbps", g.bidirectional_gbps);
    add(at + "all_bf16_tflops", g.all_bf16_tflops);
    add(at + "all_h2d_gbps", g.all_h2d_gbps);
    add(at + "all_d2h_gbps", g.all_d2h_gbps);
  }
  for (const TierProfile& t : p.tiers) {
    const std::string at = "tiers[" + t.name + "].";
    // One setting's four curves, each point under PREFIX + curve + "@" + streams.
    const auto add_curves = [&add](const std::string& prefix, const std::vector<CurvePoint>& write,
                                   const std::vector<CurvePoint>& read,
                                   const std::vector<CurvePoint>& mixed_write,
                                   const std::vector<CurvePoint>& mixed_read) {
      for (const auto& [name, curve] :
           {std::pair{"write_gbps", &write}, std::pair{"read_gbps", &read},
            std::pair{"mixed_write_gbps", &mixed_write}, std::pair{"mixed_read_gbps", &mixed_read}})
        for (const CurvePoint& pt : *curve) add(prefix + name + "@" + std::to_string(pt.streams), pt.value);
    };
    add_curves(at, t.write_gbps, t.read_gbps, t.mixed_write_gbps, t.mixed_read_gbps);
    for (const TierIoSetting& io : t.io_settings)
      add_curves(at + "io_settings[" + format_bytes(static_cast<double>(io.block_size)) + " qd " +
                     std::to_string(io.queue_depth) + "].",
                 io.write_gbps, io.read_gbps, io.mixed_write_gbps, io.mixed_read_gbps);
    add(at + "latency_us", t.latency_us);
    if (t.io_ratio_adam_busy > 0) {
      f.emplace_back(at + "update_interference.io_ratio", t.io_ratio_adam_busy);
      f.emplace_back(at + "update_interference.adam_ratio", t.adam_ratio_io_busy);
    }
    if (t.slot_handoff_us > 0 || t.slot_handoff_waits_adam > 0) {
      f.emplace_back(at + "update_interference.slot_handoff_us", t.slot_handoff_us);
      f.emplace_back(at + "update_interference.slot_handoff_waits_adam", t.slot_handoff_waits_adam);
    }
  }
  return f;
}

std::string compare_table(const Profile& old_profile, const Profile& new_profile) {
  const auto old_figures = profile_figures(old_profile);
  const auto new_figures = profile_figures(new_profile);
  std::map<std::string, double> old_by_label(old_figures.begin(), old_figures.end());
  std::map<std::string, double> new_by_label(new_figures.begin(), new_figures.end());
  std::string out =
      "compared with the profile of " + old_profile.hostname + " at " + old_profile.measured_at + "\n";
  out += printf_string("%-44s %14s %14s %9s\n", "figure", "old", "new", "new/old");
  for (const auto& [label, now] : new_figures) {
    const auto it = old_by_label.find(label);
    if (it == old_by_label.end()) continue;
    out += printf_string("%-44s %14.4g %14.4g %9.3f\n", label.c_str(), it->second, now, now / it->second);
  }
  for (const auto& [label, now] : new_figures)
    if (!old_by_label.count(label)) out += printf_string("%-44s %14s %14.4g\n", label.c_str(), "-", now);
  for (const auto& [label, before] : old_figures)
    if (!new_by_label.count(label)) out += printf_string("%-44s %14.4g %14s\n", label.c_str(), before, "-");
  return out;
}

}  // namespace mlpo::profiles
