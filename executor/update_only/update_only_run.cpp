#include "executor/update_only/update_only_run.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "core/cpu_ticks.hpp"
#include "core/diagnostics.hpp"
#include "core/error.hpp"
#include "core/rank_shard.hpp"
#include "core/rates.hpp"
#include "core/step_record.hpp"
#include "core/thread_pool.hpp"
#include "core/tier_rates.hpp"
#include "executor/io/tier_set.hpp"
#include "executor/io/tier_slots.hpp"
#include "executor/offload/gradient_norm.hpp"
#include "executor/offload/rank_engine.hpp"
#include "executor/offload/state_store.hpp"
#include "executor/offload/tier_run_directories.hpp"
#include "executor/offload/update_pipeline.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/update_only/internal/launched_rank_group.hpp"
#include "executor/update_only/internal/local_rank_group.hpp"
#include "executor/update_only/synthetic_gradients.hpp"
#include "core/usable_cores.hpp"

namespace mlpo::update_only {

// The engine this program drives: the same one training drives (executor/offload).
using offload::chunk_square_sums;
using offload::clip_scale;
using offload::default_run_name;
using offload::global_norm;
using offload::RankEngine;
using offload::TierRunDirectories;
using offload::UpdatePipeline;
using offload::UpdateStats;

namespace {

// Digests of the rank's chunks, in chunk order, through a staging chunk that carries
// partial chunks across subgroup boundaries.
void digest_rank_state(UpdatePipeline& pipeline, const RankShard& shard, std::span<Sha256> out) {
  std::vector<float> p(kNormChunk), m(kNormChunk), v(kNormChunk);
  std::size_t filled = 0;
  std::int64_t chunk = shard.global_begin / kNormChunk;
  auto flush = [&] {
    out[static_cast<std::size_t>(chunk++)] = chunk_digest(p.data(), m.data(), v.data(), filled);
    filled = 0;
  };
  pipeline.visit_state([&](const Subgroup& sg, const float* sp, const float* sm, const float* sv) {
    std::int64_t i = 0;
    while (i < sg.elements) {
      const std::size_t take =
          std::min<std::size_t>(kNormChunk - filled, static_cast<std::size_t>(sg.elements - i));
      std::memcpy(p.data() + filled, sp + i, take * sizeof(float));
      std::memcpy(m.data() + filled, sm + i, take * sizeof(float));
      std::memcpy(v.data() + filled, sv + i, take * sizeof(float));
      filled += take;
      i += static_cast<std::int64_t>(take);
      if (filled == static_cast<std::size_t>(kNormChunk)) flush();
    }
  });
  if (filled > 0) flush();
}

// One rank's whole run. Runs in the rank's process.
void run_rank(const UpdateOnlyOptions& o, const std::string& run, int rank, RankGroup& group,
              unsigned threads) {
  const RankShard shard = shard_for(o.params, o.ranks, rank);
  const Plan& plan = o.plan;
  const bool fp32_grads = plan.gradients == GradientPolicy::flush_fp32;
  ThreadPool pool_threads(threads);
  RankEngine engine(plan, shard, run, pool_threads);
  UpdatePipeline& pipeline = engine.pipeline();
  pipeline.initialize(
      [&](std::int64_t local) { return synthetic_initial_weight(o.seed, shard.global_begin + local); });

  std::vector<bf16> grads(static_cast<std::size_t>(shard.elements));
  std::vector<bf16> weights(static_cast<std::size_t>(shard.elements));
  const std::int64_t first_chunk = shard.global_begin / kNormChunk;
  for (std::int64_t step = 1; step <= o.steps; ++step) {
    RankStepRecord& rec = group.record(rank, step - 1);
    const auto b0 = std::chrono::steady_clock::now();
    const std::optional<CpuTicks> cpu0 = read_cpu_ticks();
    synthetic_gradients(o.seed, step, shard.global_begin, grads, pool_threads);
    auto sums = chunk_square_sums(grads, pool_threads);
    const double norm = global_norm(group.share_chunk_sums(sums, first_chunk));
    group.barrier();  // everyone has read the sums before the next step overwrites them
    if (fp32_grads) rec.gradient_flush_s = pipeline.flush_gradients(grads);  // returns its seconds
    rec.backward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();

    AdamWParams adam = o.adam;
    adam.step = step;
    adam.grad_scale = clip_scale(norm, o.max_grad_norm);
    auto steps = engine.plan_iteration(step - 1);
    const std::optional<CpuTicks> update0 = read_cpu_ticks();
    UpdateStats st = pipeline.update(steps, grads, adam, weights);
    rec.update_s = st.seconds;
    const std::optional<CpuTicks> update1 = read_cpu_ticks();
    rec.cpu_steal = steal_share(cpu0, update1).value_or(-1.0);
    rec.update_cpu_idle = idle_share(update0, update1).value_or(-1.0);
    rec.adam_s = st.adam_s;
    rec.prefetch_stall_s = st.prefetch_stall_s;
    rec.grad_norm = norm;
    rec.cache_hits = st.cache_hits;
    rec.reads = st.reads;
    rec.writes = st.writes;
    rec.elements = st.elements;
    for (std::size_t t = 0; t < st.tiers.size() && t < static_cast<std::size_t>(kMaxStatTiers); ++t) {
      rec.read_bytes[t] = st.tiers[t].read_bytes;
      rec.write_bytes[t] = st.tiers[t].write_bytes;
      rec.busy_s[t] = st.tiers[t].busy_s;
      rec.slot_wait_s[t] = st.tiers[t].slot_wait_s;
      const auto& device = st.tiers[t].device;
      rec.device_busy_s[t] = device ? static_cast<double>(device->busy_ms) / 1e3 : -1.0;
      rec.device_read_bytes[t] = device ? device->read_bytes : 0;
      rec.device_write_bytes[t] = device ? device->write_bytes : 0;
    }
    group.barrier();  // the step's records are complete
  }
  if (o.state_hash) digest_rank_state(pipeline, shard, group.chunk_digests());
}

// The step's record from every rank's, tiers and bound apart: times the slowest rank's,
// counts the sum over the ranks.
StepRecord ranks_step_record(RankGroup& group, std::int64_t step) {
  StepRecord record;
  record.step = step + 1;
  double steal = -1, idle = -1;
  std::vector<double> rank_update_s;  // each rank's own update time: the step waits for the slowest
  record.gradient_flush_s = 0.0;
  record.adam_s = 0.0;
  for (int r = 0; r < group.ranks(); ++r) {
    const auto& rank = group.record(r, step);
    rank_update_s.push_back(rank.update_s);
    record.update_s = std::max(record.update_s, rank.update_s);
    record.backward_s = std::max(record.backward_s, rank.backward_s);
    record.gradient_flush_s = std::max(*record.gradient_flush_s, rank.gradient_flush_s);
    record.adam_s = std::max(*record.adam_s, rank.adam_s);
    steal = std::max(steal, rank.cpu_steal);
    idle = std::max(idle, rank.update_cpu_idle);
    record.prefetch_stall_s = std::max(record.prefetch_stall_s, rank.prefetch_stall_s);
    record.cache_hits += rank.cache_hits;
    record.reads += rank.reads;
    record.writes += rank.writes;
    record.elements += rank.elements;
  }
  if (group.ranks() > 1) record.rank_update_s = std::move(rank_update_s);
  record.grad_norm = group.record(0, step).grad_norm;
  if (steal >= 0) record.cpu_steal = steal;
  if (idle >= 0) record.update_cpu_idle = idle;
  return record;
}

// File tier `t`'s traffic in the step over every rank: bytes summed, busy the slowest rank's,
// slot waits summed, and the device counters of the rank with the longest span.
StepTierRecord tier_step_record(RankGroup& group, std::int64_t step, std::size_t t, const std::string& name) {
  std::uint64_t rb = 0, wb = 0, device_rb = 0, device_wb = 0;
  double busy = 0, wait = 0, device_busy = -1;
  for (int r = 0; r < group.ranks(); ++r) {
    const auto& rec = group.record(r, step);
    rb += rec.read_bytes[t];
    wb += rec.write_bytes[t];
    busy = std::max(busy, rec.busy_s[t]);
    wait += rec.slot_wait_s[t];
    // Node-wide counters over each rank's own (nearly equal) span: the longest span's.
    if (rec.device_busy_s[t] > device_busy) {
      device_busy = rec.device_busy_s[t];
      device_rb = rec.device_read_bytes[t];
      device_wb = rec.device_write_bytes[t];
    }
  }
  StepTierRecord tier{name, static_cast<std::int64_t>(rb), static_cast<std::int64_t>(wb), busy, wait};
  if (device_busy >= 0)
    tier.device = StepDeviceRecord{device_busy, static_cast<std::int64_t>(device_rb),
                                   static_cast<std::int64_t>(device_wb)};
  return tier;
}

// Adds the physical bound of the step (update_only_run.hpp) from the bytes each tier moved, at
// the profile's rates, and marks the tiers updated in place (a mapped host tier: no bytes to
// move, only Adam's time). No bound without a profile.
void add_step_bound(StepRecord& record, const std::vector<std::optional<TierRates>>& tier_rates,
                    double adam_rate) {
  double bytes_total = 0, bw_total = 0, slowest_tier_s = 0;
  for (std::size_t t = 0; t < record.tiers.size() && !tier_rates.empty(); ++t) {
    StepTierRecord& tier = record.tiers[t];
    if (!tier_rates[t]) {
      tier.in_place = true;
      continue;
    }
    // The least time this tier needs for its own bytes at its measured bandwidths: reads and
    // writes overlapped at the profile's mixed rates, or one direction after the other at the
    // alone rates, whichever is faster, at the best stream count (TierRates::least_seconds).
    const TierRates& rates = *tier_rates[t];
    const double rbd = static_cast<double>(tier.read_bytes), wbd = static_cast<double>(tier.write_bytes);
    const double tier_s = rates.least_seconds(rbd, wbd);
    slowest_tier_s = std::max(slowest_tier_s, tier_s);
    bytes_total += rbd + wbd;
    // The tier's effective bandwidth for this read/write mix (its even-mix rate when it moved nothing).
    bw_total += rbd + wbd > 0 ? (rbd + wbd) / tier_s : 2.0 / rates.least_seconds(1.0, 1.0);
  }
  if (adam_rate <= 0) return;
  // bound: the slowest tier for the bytes this plan put on it, or Adam; ideal_bound: the
  // design formula, bytes over the sum of all tiers' bandwidths (reachable only when the
  // plan splits bytes in proportion to bandwidth).
  const double adam_bound = static_cast<double>(record.elements) / adam_rate;
  const double bound = std::max(slowest_tier_s, adam_bound);
  record.io_bound_s = slowest_tier_s;
  record.adam_bound_s = adam_bound;
  record.bound_s = bound;
  record.ideal_bound_s = std::max(bw_total > 0 ? bytes_total / bw_total : 0.0, adam_bound);
  record.achieved_over_bound = bound > 0 ? record.update_s / bound : 0.0;
}

StepRecord step_record(RankGroup& group, std::int64_t step, const std::vector<std::string>& tier_names,
                       const std::vector<std::optional<TierRates>>& tier_rates, double adam_rate) {
  StepRecord record = ranks_step_record(group, step);
  for (std::size_t t = 0; t < tier_names.size(); ++t)
    record.tiers.push_back(tier_step_record(group, step, t, tier_names[t]));
  add_step_bound(record, tier_rates, adam_rate);
  return record;
}

// Refuses options no run can use: counts out of range, AdamW values that are not finite or out
// of range (named by their flags).
void check_options(const UpdateOnlyOptions& o) {
  if (o.ranks < 1 || o.ranks > 256)
    throw Error("--ranks: must be between 1 and 256, got " + std::to_string(o.ranks));
  if (o.steps < 1) throw Error("--steps: must be >= 1");
  if (o.params < 1) throw Error("--params: must be >= 1");
  // AdamW's values, named by their flags: a NaN or infinite rate would "succeed" with NaN state.
  const std::pair<const char*, bool> adam_checks[] = {
      {"--lr: must be a finite number > 0", std::isfinite(o.adam.lr) && o.adam.lr > 0},
      {"--beta1: must be in [0, 1)", o.adam.beta1 >= 0 && o.adam.beta1 < 1},
      {"--beta2: must be in [0, 1)", o.adam.beta2 >= 0 && o.adam.beta2 < 1},
      {"--eps: must be a finite number > 0", std::isfinite(o.adam.eps) && o.adam.eps > 0},
      {"--weight-decay: must be a finite number >= 0",
       std::isfinite(o.adam.weight_decay) && o.adam.weight_decay >= 0},
      {"--max-grad-norm: must be a finite number (0 = no clipping)", std::isfinite(o.max_grad_norm)}};
  for (const auto& [message, ok] : adam_checks)
    if (!ok) throw Error(message);
}

// Runs every rank: in this process when there is one, else as forked processes, of which the
// first to fail ends the others.
void run_ranks(const UpdateOnlyOptions& o, const std::string& run, LocalRankGroup& group, unsigned threads) {
  if (o.ranks == 1) {
    run_rank(o, run, 0, group, threads);
  } else {
    std::fflush(nullptr);
    std::vector<pid_t> children;
    for (int r = 0; r < o.ranks; ++r) {
      pid_t pid = ::fork();
      if (pid < 0)
        throw Error("cannot start rank " + std::to_string(r) + " (fork: " + errno_text(errno) + ")");
      if (pid == 0) {
        int code = 0;
        try {
          run_rank(o, run, r, group, threads);
        } catch (const std::exception& e) {
          write_stderr_line("mlpo-run: rank " + std::to_string(r) + ": error: " + e.what());
          code = 2;
        }
        std::fflush(nullptr);
        ::_exit(code);
      }
      children.push_back(pid);
    }
    // Wait for all; the first failure ends the others (they may be blocked on a barrier).
    std::string failure;
    std::size_t left = children.size();
    while (left > 0) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        break;
      }
      auto it = std::find(children.begin(), children.end(), pid);
      if (it == children.end()) continue;
      --left;
      const int rank = static_cast<int>(it - children.begin());
      *it = -1;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && failure.empty()) {
        failure = "rank " + std::to_string(rank) +
                  (WIFSIGNALED(status) ? " was killed by signal " + std::to_string(WTERMSIG(status))
                                       : " failed (exit status " + std::to_string(WEXITSTATUS(status)) +
                                             "; its error is above)");
        for (pid_t other : children)
          if (other > 0) ::kill(other, SIGTERM);
      }
    }
    if (!failure.empty()) throw Error(failure);
  }
}

// The log records and the summary from every rank's records (in the first rank's process).
UpdateOnlyResult summarize(const UpdateOnlyOptions& o, RankGroup& group,
                           const std::vector<std::string>& tier_names,
                           const std::vector<std::optional<TierRates>>& tier_rates, double adam_rate,
                           const std::function<void(const Json&)>& on_step) {
  UpdateOnlyResult result;
  double sum_update = 0, sum_flush = 0, sum_bound = 0, sum_ideal = 0, sum_idle = 0;
  std::int64_t counted = 0, idle_counted = 0;
  for (std::int64_t s = 0; s < o.steps; ++s) {
    const StepRecord record = step_record(group, s, tier_names, tier_rates, adam_rate);
    Json rec = to_json(record);
    if (on_step) on_step(rec);
    if (s > 0 || o.steps == 1) {
      sum_update += record.update_s;
      sum_flush += *record.gradient_flush_s;
      if (record.update_cpu_idle) {
        sum_idle += *record.update_cpu_idle;
        ++idle_counted;
      }
      if (record.bound_s) {
        sum_bound += *record.bound_s;
        sum_ideal += *record.ideal_bound_s;
      }
      ++counted;
    }
    result.steps.push_back(std::move(rec));
  }
  result.summary = Json{{"steps", o.steps},
                        {"ranks", o.ranks},
                        {"params", o.params},
                        {"mode", to_string(o.plan.mode)},
                        {"mean_update_s", sum_update / static_cast<double>(counted)},
                        {"mean_gradient_flush_s", sum_flush / static_cast<double>(counted)},
                        {"steps_averaged", counted}};
  if (idle_counted > 0) result.summary["mean_update_cpu_idle"] = sum_idle / static_cast<double>(idle_counted);
  if (o.comm && o.comm->size() > 1) result.summary["nodes"] = o.comm->nodes();
  if (sum_bound > 0) {
    result.summary["mean_bound_s"] = sum_bound / static_cast<double>(counted);
    result.summary["mean_ideal_bound_s"] = sum_ideal / static_cast<double>(counted);
    result.summary["achieved_over_bound"] = sum_update / sum_bound;
  }
  if (o.state_hash) {
    auto digests = group.chunk_digests();
    result.state_sha256 = combine_digests(digests);
    result.summary["state_sha256"] = result.state_sha256;
  }
  return result;
}

// The launched world when there is one (several ranks): one rank per process, and --ranks
// must be left out or agree.
comm::Communicator* launched_world(const UpdateOnlyOptions& o) {
  if (!o.comm || o.comm->size() == 1) return nullptr;
  if (o.ranks != 1 && o.ranks != o.comm->size())
    throw Error("--ranks " + std::to_string(o.ranks) + ": the launcher started " +
                std::to_string(o.comm->size()) + " ranks, one per process; drop --ranks (or launch " +
                std::to_string(o.ranks) + ")");
  return o.comm;
}

}  // namespace

UpdateOnlyResult run_update_only(const UpdateOnlyOptions& given,
                                 const std::function<void(const Json&)>& on_step) {
  UpdateOnlyOptions o = given;
  comm::Communicator* world = launched_world(o);
  if (world) o.ranks = world->size();
  check_options(o);
  validate(o.plan);
  std::vector<std::string> tier_names;
  std::vector<std::optional<TierRates>> tier_rates;  // per file tier; none for one updated in place
  for (const auto& t : o.plan.tiers) {
    if (t.kind == TierKind::memory) continue;
    if (static_cast<int>(tier_names.size()) == kMaxStatTiers)
      throw Error("tiers: at most " + std::to_string(kMaxStatTiers) + " file tiers are supported");
    tier_names.push_back(t.name);
    if (!std::filesystem::is_directory(t.path))
      throw Error("tier '" + t.name + "' (" + t.path +
                  "): directory does not exist; create it or fix the plan's path");
    if (o.profile && updated_in_place(t.kind)) {
      tier_rates.emplace_back();
    } else if (o.profile) {
      const TierProfile* tp = o.profile->find_tier(t.name);
      if (!tp)
        throw Error("--profile has no tier named '" + t.name +
                    "' (profile the tier with mlpo-profile --tier " + t.name + "=" + t.path + ")");
      tier_rates.push_back(tier_rates_of(*tp));
    }
  }
  // The ranks on this node share its cores; launched ranks may span nodes, each with its own.
  const unsigned cores = usable_cores();
  const int node_ranks = world ? world->local_size() : o.ranks;
  const unsigned threads = o.threads ? o.threads : std::max(1u, cores / static_cast<unsigned>(node_ranks));
  double adam_rate = 0;
  if (o.profile)
    adam_rate = node_adam_elements_per_s(o.profile->host.adam_elements_per_s, static_cast<double>(cores),
                                         static_cast<double>(node_ranks), static_cast<double>(threads)) *
                (world ? world->nodes() : 1);

  // Its tier directories, removed at the end; those of killed runs on this host, at the start.
  // Launched ranks each have their own (the default name carries host and pid).
  std::string run = o.run_name.empty() ? default_run_name("update") : o.run_name;
  if (world && !o.run_name.empty()) run += "-rank" + std::to_string(world->rank());
  TierRunDirectories run_dirs(o.plan, run);
  const std::int64_t chunks = (o.params + kNormChunk - 1) / kNormChunk;
  if (world) {
    LaunchedRankGroup group(*world, chunks, o.steps);
    run_rank(o, run, world->rank(), group, threads);
    group.collect();
    if (world->rank() != 0) return {};
    return summarize(o, group, tier_names, tier_rates, adam_rate, on_step);
  }
  LocalRankGroup group(o.ranks, chunks, o.steps);
  run_ranks(o, run, group, threads);
  return summarize(o, group, tier_names, tier_rates, adam_rate, on_step);
}

}  // namespace mlpo::update_only
