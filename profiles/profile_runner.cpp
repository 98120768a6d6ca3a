#include "profiles/profile_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <set>

#include "core/cpu_ticks.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::profiles {

namespace {

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

}  // namespace

PreparedProfile prepare_profile(const ProfileRequest& request) {
  if (request.tiers.empty()) throw Error("no tier to profile; pass --tier NAME=PATH[:KIND]");
  std::set<std::string> names;
  for (const TierSpec& t : request.tiers) {
    if (t.name.empty()) throw Error("--tier '=" + t.path.string() + "': the tier name is empty");
    if (!names.insert(t.name).second)
      throw Error("--tier " + t.name + ": duplicate tier name '" + t.name +
                  "'; give every --tier a different NAME");
  }
  if (request.max_streams > 64)
    throw Error("--streams " + std::to_string(request.max_streams) + ": at most 64");
  if (request.repetitions < 0 || request.repetitions > 1000) throw Error("--reps must be between 1 and 1000");
  if (request.micro_batch < 1) throw Error("--micro-batch must be at least 1");
  if (request.seq_len < 0) throw Error("--seq-len must be positive");
  if (request.comm && request.comm_options.ranks < 2)
    throw Error("--comm-ranks must be at least 2 (collectives need several ranks)");
  if (!request.inter_node_options.launcher.empty() && request.inter_node_options.ranks < 2)
    throw Error("--comm-nodes must be at least 2 (collectives between nodes need two nodes)");

  PreparedProfile p;
  p.request = request;
  const bool quick = request.quick;
  const int reps = request.repetitions > 0 ? request.repetitions : (quick ? 3 : 5);

  TierProbeOptions& t = p.tier_options;
  t.bytes_per_stream =
      request.tier_bytes_per_stream > 0 ? request.tier_bytes_per_stream : (quick ? 256 * MiB : 1 * GiB);
  t.max_streams = request.max_streams > 0 ? request.max_streams : (quick ? 4 : 8);
  t.block_size = request.block_size;
  t.queue_depth = request.queue_depth;
  t.io_settings = request.io_settings;
  t.repetitions = reps;
  t.latency_samples = quick ? 32 : 128;
  for (const TierSpec& spec : request.tiers) p.tiers.push_back(plan_tier_probe(spec, t));

  const ModelSpec model = load_model(request.model);
  const std::int64_t tokens = request.micro_batch * (request.seq_len > 0 ? request.seq_len : model.seq_len);

  HostProbeOptions& h = p.host_options;
  const std::uint64_t host_bytes =
      request.host_bytes > 0 ? request.host_bytes : (quick ? 256 * MiB : 1 * GiB);
  const HostProfile facts = read_host_facts();
  // State + gradient + bf16 copy is 4/3 of the state; keep it within half the available memory.
  if (facts.available_bytes > 0 && host_bytes / 3 * 4 > static_cast<std::uint64_t>(facts.available_bytes) / 2)
    throw Error("--host-size " + format_bytes(static_cast<double>(host_bytes)) + ": more than half of the " +
                format_bytes(static_cast<double>(facts.available_bytes)) +
                " of available memory; pass a smaller --host-size");
  h.memcpy_bytes = host_bytes;
  h.adam_state_bytes = host_bytes;
  h.repetitions = reps;
  h.gemm_model = model;
  h.gemm_tokens = std::min<std::int64_t>(tokens, quick ? 128 : 512);
  // The model probe at the run's shape. The model's own sequence length is capped at 512
  // tokens (128 with --quick) to keep the probe short; a --seq-len given is taken as it is, as
  // is --micro-batch: at small widths the rate grows with the tokens per call, so the probe
  // must time the shape the prediction is for. Its figures say the shape run.
  const std::int64_t cap = quick ? 128 : 512;
  h.model_seq_len = request.seq_len > 0 ? request.seq_len : std::min<std::int64_t>(model.seq_len, cap);
  h.model_micro_batch = std::max<std::int64_t>(1, request.micro_batch);
  h.model_repetitions = quick ? 2 : 3;

  GpuProbeOptions& g = p.gpu_options;
  g.model = model;
  g.tokens = tokens;
  g.transfer_bytes = quick ? 256 * MiB : 1 * GiB;
  g.repetitions = reps;
  return p;
}

Profile run_profile(const PreparedProfile& prepared, const GpuProber& probe_gpus,
                    const Diagnostics& diagnostics) {
  Profile profile;
  profile.hostname = hostname();
  profile.measured_at = utc_now();
  const std::string load_start = load_average();

  const std::optional<CpuTicks> host_start = read_cpu_ticks();
  profile.host = probe_host(prepared.host_options, diagnostics);
  profile.host.cpu_steal = steal_share(host_start, read_cpu_ticks());

  GpuProbeResult gpus = probe_gpus(prepared.gpu_options, diagnostics);
  profile.gpus = std::move(gpus.gpus);
  profile.gpus_reason = gpus.reason;

  for (const TierProbePlan& plan : prepared.tiers)
    profile.tiers.push_back(probe_tier(plan, prepared.tier_options, diagnostics));

  if (prepared.request.comm)
    profile.comm.host_mpi = probe_host_mpi(prepared.request.comm_options, diagnostics);
  if (!prepared.request.inter_node_options.launcher.empty())
    profile.comm.inter_node = probe_inter_node(prepared.request.inter_node_options, diagnostics);

  std::string notes = std::string(prepared.request.quick ? "--quick" : "default (thorough)") +
                      " profile; load average " + load_start + " at start, " + load_average() + " at end (" +
                      std::to_string(profile.host.cores) +
                      " cores); tier streams = separate io_uring engines, one file each";
  if (!prepared.request.notes.empty()) notes = prepared.request.notes + "; " + notes;
  profile.notes = notes;
  return profile;
}

}  // namespace mlpo::profiles
