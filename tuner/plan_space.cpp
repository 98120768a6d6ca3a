#include "tuner/plan_space.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "core/attention_blocking.hpp"
#include "core/error.hpp"
#include "core/rates.hpp"
#include "core/units.hpp"

namespace mlpo::tune {

namespace {

double state_bytes_per_element(const Plan& plan) {
  return static_cast<double>(kOptimizerStateBytes +
                             (plan.gradients == GradientPolicy::flush_fp32 ? kFp32GradBytes : 0));
}

PlanTier tier_of(const TierProfile& t) { return PlanTier{t.name, t.path, t.kind, 0.0, 0}; }

// A tier updated in place (memory, host) moves no bytes: what it delivers to the update is
// the rate at which the node's CPU Adam consumes its state (core/rates.hpp,
// in_place_update_bps). That is far above any streamed tier (the dev VM: 1.8e9 elements/s,
// 44 GB/s, against 4 GB/s of disk), so split() gives the in-place tier nearly all the state,
// up to the host memory the candidate leaves. Proportional, the streamed tiers' share takes as
// long to move as Adam takes on the in-place share, so they are done before Adam's pass over
// the whole shard is: Adam bounds such a plan. The models then compare it with the candidates
// without the in-place tier.
double update_bps(const Profile& profile, const TierProfile& t, std::int64_t ranks, std::int64_t k) {
  return updated_in_place(t.kind) ? in_place_update_bps(profile.host, ranks) : tier_update_bps(t, ranks, k);
}

// Fractions proportional to bandwidth, capped by capacity (`cap[t]` is the largest fraction
// tier t can hold); nullopt when the tiers together cannot hold the state.
std::optional<std::vector<double>> split(const std::vector<double>& bw, const std::vector<double>& cap) {
  std::vector<double> f(bw.size(), 0.0);
  std::vector<bool> fixed(bw.size(), false);
  double left = 1.0;
  for (std::size_t round = 0; round < bw.size(); ++round) {
    double free_bw = 0;
    for (std::size_t t = 0; t < bw.size(); ++t)
      if (!fixed[t]) free_bw += bw[t];
    if (free_bw <= 0) break;
    bool capped = false;
    for (std::size_t t = 0; t < bw.size(); ++t) {
      if (fixed[t]) continue;
      f[t] = left * bw[t] / free_bw;
      if (f[t] > cap[t]) {
        f[t] = cap[t];
        fixed[t] = true;
        capped = true;
      }
    }
    if (!capped) return f;
    left = 1.0;
    for (std::size_t t = 0; t < bw.size(); ++t)
      if (fixed[t]) left -= f[t];
  }
  double sum = 0;
  for (double x : f) sum += x;
  if (std::fabs(sum - 1.0) > 1e-9) return std::nullopt;
  return f;
}

}  // namespace

std::int64_t host_budget(const TuneRequest& r) {
  return r.host_memory_budget > 0 ? r.host_memory_budget : r.profile.host.available_bytes;
}

void check_param_offload(bool param_offload, const ClusterShape& shape) {
  if (param_offload && shape.ranks() > 1)
    throw Error("--param-offload: for one rank only (mlpo-run refuses it with " +
                std::to_string(shape.ranks()) +
                " ranks; ZeRO-3 already gathers the weights a part at a time); leave it out");
}

HostMemoryNeed host_memory_need(const Accounting& a, const Plan& plan, double cpu_model) {
  const double R = static_cast<double>(a.shape.ranks_per_node);
  const double sg = static_cast<double>(std::min(plan.subgroup_elements, a.params_per_rank));
  HostMemoryNeed m;
  m.pinned_buffers = R * static_cast<double>(plan.buffers) * sg * state_bytes_per_element(plan);
  const std::int64_t subgroups = (a.params_per_rank + plan.subgroup_elements - 1) / plan.subgroup_elements;
  m.cache = R * static_cast<double>(std::min(plan.host_cache_subgroups, subgroups)) * sg *
            static_cast<double>(kOptimizerStateBytes);
  m.bf16_weights = R * static_cast<double>(a.weights_bf16_bytes_per_rank);
  m.bf16_grads = R * static_cast<double>(a.grads_bf16_bytes_per_rank);
  for (std::size_t t = 0; t < plan.tiers.size(); ++t)
    if (updated_in_place(plan.tiers[t].kind)) m.state_in_memory += tier_bytes_needed(a, plan, t);
  m.cpu_model = cpu_model;
  return m;
}

double tier_bytes_needed(const Accounting& a, const Plan& plan, std::size_t t) {
  const double group = static_cast<double>(a.shape.ranks_per_node) *
                       (plan.tiers[t].kind == TierKind::remote ? static_cast<double>(a.shape.nodes) : 1.0);
  return group * static_cast<double>(a.params_per_rank) * plan.tiers[t].fraction *
         state_bytes_per_element(plan);
}

namespace {

// The executor's MicroBatchGradientSum::buffers_for: partial sums a halving tree over
// `micro` micro-batches keeps besides the arriving one.
std::int64_t partial_sum_buffers(std::int64_t micro) {
  std::int64_t depth = 0, most = 0;
  std::function<void(std::int64_t, std::int64_t)> walk = [&](std::int64_t lo, std::int64_t hi) {
    if (hi - lo == 1) {
      most = std::max(most, ++depth);
      return;
    }
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    walk(lo, mid);
    walk(mid, hi);
    --depth;
  };
  walk(0, micro);
  return micro == 1 ? 0 : most - 1;
}

}  // namespace

std::string GpuMemoryNeed::detail() const {
  return "weights " + format_bytes(weights) + " (" + weights_what + ") + gradients " +
         format_bytes(gradients) + " (" + gradients_what + ") + activations " + format_bytes(activations) +
         " + backend workspace " + format_bytes(workspace);
}

GpuMemoryNeed gpu_memory_need(const Accounting& a, bool param_offload) {
  const ModelSpec& s = a.spec;
  const double params = static_cast<double>(a.params.total);
  const double layer = static_cast<double>(a.params.per_layer);
  const double embedding = static_cast<double>(a.params.embedding);
  const double head = static_cast<double>(a.params.lm_head + s.hidden);  // lm_head + final norm
  const bool zero3 = a.shape.ranks() > 1;
  const bool offload = param_offload && !zero3;
  GpuMemoryNeed m;
  // Weights: one device buffer of the largest part (gathered, ZeRO-3), two part slots
  // (--param-offload) or all of them.
  const double largest_part = std::max({embedding, head, layer});
  if (zero3) {
    m.weights = largest_part * kBf16Bytes;
    m.weights_what = "one gathered part; the shard stays in host memory";
  } else if (offload) {
    m.weights = 2 * largest_part * kBf16Bytes;
    m.weights_what = "two streamed part slots, --param-offload";
  } else {
    m.weights = params * kBf16Bytes;
    m.weights_what = "all resident";
  }
  // Gradients (fp32 on the device): one part's buffer when they stream to the host during
  // backward (grad_accum 1 with ZeRO-3 or --param-offload), else all of them, plus the
  // micro-batch partial sums.
  const bool stream = a.shape.grad_accum == 1 && (zero3 || offload);
  const double streamed_part =
      std::max({head, layer, s.tied_embeddings ? 0.0 : embedding}) + (s.tied_embeddings ? embedding : 0.0);
  m.gradients = (stream ? streamed_part : params) * 4 +
                static_cast<double>(partial_sum_buffers(a.shape.grad_accum)) * params * 4;
  m.gradients_what = stream                   ? "one part, streamed to the host during backward"
                     : a.shape.grad_accum > 1 ? "all, fp32, and partial sums of the micro-batches"
                                              : "all, fp32";
  // Activations, as executor/model/device_memory.cpp counts them.
  const double N = static_cast<double>(a.shape.micro_batch * a.shape.seq_len);
  const double h = static_cast<double>(s.hidden), kv = static_cast<double>(s.kv_dim()),
               f = static_cast<double>(s.ffn_hidden);
  const double elements = (static_cast<double>(s.layers) + 1) * N * h + 14 * N * h + 4 * N * kv + 6 * N * f +
                          N * static_cast<double>(s.vocab);
  const double attention_rows = static_cast<double>(a.shape.micro_batch * s.heads * a.shape.seq_len);
  m.activations = elements * kBf16Bytes + 2 * N * 4 + (4 * N + attention_rows) * 4 +
                  (zero3 || offload ? 0.0 : 4.0 * (1 << 20));
  if (!zero3)
    m.activations += 2 * std::max({embedding, head, layer}) * kBf16Bytes;  // the gradient handover's staging
  // The CUDA backend's bound (CudaBackend::scratch_bound) with its default attention path, the
  // GEMM path: its head-major copies, accumulators and one block of scores
  // (core/attention_blocking.hpp); 64 MiB covers the fixed parts (cuBLASLt workspace, reduction
  // chunks, the embedding backward's sort).
  const AttentionDims dims{a.shape.micro_batch, a.shape.seq_len, s.heads, s.kv_heads, s.hidden / s.heads};
  m.workspace = 64.0 * (1 << 20) + static_cast<double>(attention_workspace_bytes(dims, kBf16Bytes));
  return m;
}

std::string gpu_memory_advice(const Accounting& a, bool param_offload, double have) {
  if (a.shape.ranks() == 1 && !param_offload && gpu_memory_need(a, true).total() <= have)
    return "the weights do not fit: pass --param-offload here and to mlpo-run (weights in host memory, "
           "streamed per layer; "
           "it needs " +
           format_bytes(gpu_memory_need(a, true).total()) + ")";
  if (a.shape.grad_accum > 1) {
    Accounting one = a;
    one.shape.grad_accum = 1;
    if (gpu_memory_need(one, param_offload).total() <= have)
      return "the full fp32 gradient of --grad-accum " + std::to_string(a.shape.grad_accum) +
             " does not fit: use --grad-accum 1 (the gradients then leave the device layer by layer)";
  }
  if (a.shape.ranks() == 1) return "lower --micro-batch or --seq-len, or add GPUs (--nodes, --gpus-per-node)";
  return "lower --micro-batch or --seq-len";
}

double cpu_model_bytes(const Accounting& a, const TuneRequest& request) {
  if (request.options.update_only || !request.profile.gpus.empty()) return 0;
  return static_cast<double>(a.shape.ranks_per_node) * gpu_memory_need(a, request.param_offload).total();
}

std::optional<double> gpu_memory_budget(const TuneRequest& request) {
  if (request.options.update_only || request.profile.gpus.empty()) return std::nullopt;
  return static_cast<double>(request.profile.gpus.front().memory_bytes);
}

std::optional<Shortfall> check_fits(const Accounting& a, const Plan& plan, const TuneRequest& request) {
  const HostMemoryNeed m = host_memory_need(a, plan, cpu_model_bytes(a, request));
  const double budget = static_cast<double>(host_budget(request));
  if (m.total() > budget)
    return Shortfall{"host memory", m.total(), budget,
                     "bf16 weights " + format_bytes(m.bf16_weights) + " + bf16 gradients " +
                         format_bytes(m.bf16_grads) + " + pinned buffers " + format_bytes(m.pinned_buffers) +
                         " + cache " + format_bytes(m.cache) + " + state on RAM tiers " +
                         format_bytes(m.state_in_memory) + " + CPU backend model " +
                         format_bytes(m.cpu_model) + " per node"};
  for (std::size_t t = 0; t < plan.tiers.size(); ++t) {
    const TierProfile* tp = request.profile.find_tier(plan.tiers[t].name);
    const double need = tier_bytes_needed(a, plan, t);
    if (tp != nullptr && need > static_cast<double>(tp->free_bytes))
      return Shortfall{"tier " + tp->name + " capacity", need, static_cast<double>(tp->free_bytes),
                       "its share of the optimizer state"};
  }
  if (const std::optional<double> have = gpu_memory_budget(request)) {
    const GpuMemoryNeed need = gpu_memory_need(a, request.param_offload);
    if (need.total() > *have)
      return Shortfall{"GPU memory", need.total(), *have, need.detail() + " per rank"};
  }
  return std::nullopt;
}

std::vector<std::int64_t> limit_values(const Profile& profile, std::size_t tier, const ClusterShape& shape) {
  // 1..R, or none (0). Each rank has a reader and a writer on a tier, so even k = R holds
  // some of them back; with R = 1, k = 1 makes the rank's reads and writes take turns. A tier
  // updated in place has no transfers to limit: none only.
  if (updated_in_place(profile.tiers[tier].kind)) return {0};
  const std::int64_t per_slot = profile.tiers[tier].kind == TierKind::remote ? shape.nodes : 1;
  std::vector<std::int64_t> out;
  for (std::int64_t k = 1; k <= shape.ranks_per_node; ++k) out.push_back(k * per_slot);
  out.push_back(0);
  return out;
}

std::int64_t node_limit(const TierProfile& tier, std::int64_t k, std::int64_t nodes) {
  if (tier.kind != TierKind::remote || k <= 0) return k;
  return std::max<std::int64_t>(1, k / std::max<std::int64_t>(1, nodes));
}

std::vector<std::int64_t> grid_subgroup_sizes(const Accounting& a) {
  // From 4 Mi elements (48 MiB of state) up, keeping at least 8 subgroups per rank; smaller
  // ones only for shards too small for that. The models carry no per-subgroup overhead
  // (submission, dispatch), so they would favour tiny subgroups unjustly.
  std::vector<std::int64_t> sizes;
  for (std::int64_t sg = std::int64_t{1} << 22; sg <= (std::int64_t{1} << 28); sg <<= 2)
    if (a.params_per_rank / sg >= 8) sizes.push_back(sg);
  for (std::int64_t sg = std::int64_t{1} << 20; sizes.empty() && sg >= 1024; sg >>= 2)
    if (a.params_per_rank / sg >= 8 || sg == 1024) sizes.push_back(sg);
  return sizes;
}

std::vector<IoSetting> common_io_settings(const Profile& profile, const std::vector<std::size_t>& members) {
  std::vector<IoSetting> common;
  bool first = true;
  for (std::size_t m : members) {
    const TierProfile& tp = profile.tiers[m];
    if (updated_in_place(tp.kind)) continue;
    const auto measured = tp.measured_io_settings();
    if (first) {
      common = measured;
      first = false;
      continue;
    }
    std::erase_if(common, [&](const auto& s) {
      return std::find(measured.begin(), measured.end(), s) == measured.end();
    });
  }
  return common;
}

Plan tier_setting_plan(const Accounting& a, const TuneRequest& request, const TierSetting& setting) {
  Plan p;
  p.model_name = a.spec.name;
  p.model_params = a.params.total;
  p.cluster = a.shape;
  p.gradients = setting.gradients;
  std::int64_t block = 0, depth = 0;
  for (std::size_t i = 0; i < setting.members.size(); ++i) {
    const TierProfile& tp = request.profile.tiers[setting.members[i]];
    PlanTier pt = tier_of(tp);
    pt.concurrency_limit = setting.limits[i];
    p.tiers.push_back(pt);
    if (updated_in_place(tp.kind)) continue;
    block = std::max(block, tp.block_size);
    depth = std::max(depth, tp.queue_depth);
  }
  // The I/O setting is one the profile measured on every streamed tier when there is one
  // (the finer search tries the others, candidate_search.cpp); else the largest main ones.
  const auto common = common_io_settings(request.profile, setting.members);
  if (!common.empty()) {
    block = common.front().block_size;
    depth = common.front().queue_depth;
  }
  if (block > 0) p.io_block_size = block;
  if (depth > 0) p.io_queue_depth = depth;
  return p;
}

bool fill_fractions(const Accounting& a, const TuneRequest& request, Plan& p) {
  // Fractions for one candidate: by bandwidth (Adam's rate for tiers updated in place),
  // each tier capped by its free space, and RAM-backed tiers also by the host memory the
  // candidate's buffers, cache and bf16 copies leave (so a small budget still gets a share
  // of /dev/shm rather than none). False when the tiers cannot hold the state or a tier would
  // get (almost) nothing: the subset without it covers that.
  const std::int64_t R = a.shape.ranks_per_node;
  std::vector<double> bw, cap, full_bytes;
  for (std::size_t i = 0; i < p.tiers.size(); ++i) {
    const TierProfile* tp = request.profile.find_tier(p.tiers[i].name);
    MLPO_CHECK(tp != nullptr, "plan tier " + p.tiers[i].name + " not in the profile");
    // At the plan's I/O setting when the tier was measured at it (as rates_of models it).
    const std::optional<TierProfile> at = tp->at_io_setting(p.io_setting());
    double bps = update_bps(request.profile, at ? *at : *tp, R,
                            node_limit(*tp, p.tiers[i].concurrency_limit, a.shape.nodes));
    // A remote tier moves no more for one node than the node's share of the backbone, each
    // direction (as both models cap it): the profile measured it from one node alone.
    if (tp->kind == TierKind::remote && request.options.remote_backbone_gbps > 0)
      bps =
          std::min(bps, 2 * request.options.remote_backbone_gbps * 1e9 / static_cast<double>(a.shape.nodes));
    bw.push_back(bps);
    p.tiers[i].fraction = 1.0;
    full_bytes.push_back(tier_bytes_needed(a, p, i));
    cap.push_back(
        full_bytes.back() > 0 ? std::min(1.0, static_cast<double>(tp->free_bytes) / full_bytes.back()) : 1.0);
  }
  const HostMemoryNeed fixed = host_memory_need(a, p, cpu_model_bytes(a, request));
  const double room = static_cast<double>(host_budget(request)) - (fixed.total() - fixed.state_in_memory);
  for (std::size_t i = 0; i < p.tiers.size(); ++i)
    if (updated_in_place(p.tiers[i].kind) && full_bytes[i] > 0)
      cap[i] = std::clamp(room / full_bytes[i], 0.0, cap[i]);
  const auto f = split(bw, cap);
  if (!f || std::any_of(f->begin(), f->end(), [](double x) { return x < 1e-3; })) return false;
  for (std::size_t i = 0; i < p.tiers.size(); ++i) p.tiers[i].fraction = (*f)[i];
  return true;
}

std::vector<Plan> grid_variants(const Accounting& a, const TuneRequest& request, const TierSetting& setting) {
  const Plan tiers_plan = tier_setting_plan(a, request, setting);
  const std::pair<std::int64_t, std::int64_t> pipelines[] = {{2, 1}, {4, 2}, {8, 4}};  // buffers, prefetch
  std::vector<Plan> out;
  for (std::int64_t sg : grid_subgroup_sizes(a)) {
    const std::int64_t n = (a.params_per_rank + sg - 1) / sg;
    std::vector<std::int64_t> caches{0, (n + 15) / 16, (n + 3) / 4, n};
    caches.erase(std::unique(caches.begin(), caches.end()), caches.end());
    for (const auto& [buffers, prefetch] : pipelines) {
      for (OrderPolicy order : {OrderPolicy::alternating, OrderPolicy::ascending}) {
        for (std::int64_t cache : caches) {
          if (cache > 0 && order == OrderPolicy::ascending && cache < n) continue;  // never hits: pure cost
          Plan p = tiers_plan;
          p.subgroup_elements = sg;
          p.buffers = buffers;
          p.prefetch_depth = prefetch;
          p.order = order;
          p.host_cache_subgroups = cache;
          if (fill_fractions(a, request, p)) out.push_back(std::move(p));
        }
      }
    }
  }
  return out;
}

std::vector<Plan> candidate_plans(const Accounting& a, const TuneRequest& request) {
  const Profile& profile = request.profile;
  const std::size_t T = profile.tiers.size();
  std::vector<Plan> out;
  for (std::uint32_t subset = 1; subset < (1u << T); ++subset) {
    TierSetting setting;
    for (std::size_t t = 0; t < T; ++t)
      if (subset & (1u << t)) setting.members.push_back(t);
    // Every combination of limits over the member tiers.
    std::vector<std::vector<std::int64_t>> values;
    for (std::size_t t : setting.members) values.push_back(limit_values(profile, t, a.shape));
    std::vector<std::size_t> choice(setting.members.size(), 0);
    setting.limits.assign(setting.members.size(), 0);
    for (bool more = true; more;) {
      for (std::size_t i = 0; i < setting.members.size(); ++i) setting.limits[i] = values[i][choice[i]];
      for (GradientPolicy grads : {GradientPolicy::delayed, GradientPolicy::flush_fp32}) {
        setting.gradients = grads;
        for (Plan& p : grid_variants(a, request, setting)) out.push_back(std::move(p));
      }
      std::size_t i = 0;  // next limit combination
      while (i < choice.size() && ++choice[i] == values[i].size()) choice[i++] = 0;
      more = i < choice.size();
    }
  }
  return out;
}

namespace {

Plan baseline_on(const Accounting& a, const TierProfile& tp, std::int64_t subgroup_elements) {
  Plan p;
  p.model_name = a.spec.name;
  p.model_params = a.params.total;
  p.cluster = a.shape;
  p.mode = PlanMode::baseline;
  p.subgroup_elements = subgroup_elements;
  p.tiers = {tier_of(tp)};
  p.tiers[0].fraction = 1.0;
  p.gradients = GradientPolicy::flush_fp32;
  p.order = OrderPolicy::ascending;
  p.host_cache_subgroups = 0;
  p.buffers = 4;
  p.prefetch_depth = 1;
  return p;
}

}  // namespace

std::optional<Plan> baseline_plan(const Accounting& a, const TuneRequest& request,
                                  std::int64_t subgroup_elements) {
  if (!request.baseline_tier.empty()) {
    const TierProfile* tp = request.profile.find_tier(request.baseline_tier);
    if (tp == nullptr) {
      std::string names;
      for (const auto& t : request.profile.tiers)
        names += (names.empty() ? "" : ", ") + t.name + " (" + to_string(t.kind) + ")";
      throw Error("--baseline-tier " + request.baseline_tier +
                  ": the profile has no such tier; its tiers are " + names);
    }
    Plan p = baseline_on(a, *tp, subgroup_elements);
    if (auto short_of = check_fits(a, p, request))
      throw Error("--baseline-tier " + request.baseline_tier + ": the baseline on it does not fit: " +
                  short_of->resource + " is short by " + format_bytes(short_of->need - short_of->have) +
                  " (" + short_of->detail + "); name a larger tier or leave --baseline-tier out");
    return p;
  }
  // ZeRO-3 offload streams its state from node-local NVMe: that kind first, then any
  // streamed tier, and a tier updated in place only when no streamed tier can hold it.
  const std::function<bool(const TierProfile&)> passes[] = {
      [](const TierProfile& t) { return t.kind == TierKind::nvme; },
      [](const TierProfile& t) { return !updated_in_place(t.kind); },
      [](const TierProfile& t) { return updated_in_place(t.kind); }};
  for (const auto& admits : passes) {
    std::optional<Plan> best;
    double best_bw = 0;
    for (const TierProfile& tp : request.profile.tiers) {
      if (!admits(tp)) continue;
      Plan p = baseline_on(a, tp, subgroup_elements);
      if (check_fits(a, p, request)) continue;
      const double bw = tier_update_bps(tp, a.shape.ranks_per_node, 0);
      if (!best || bw > best_bw) {
        best_bw = bw;
        best = p;
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

void report_infeasible(const Accounting& a, const TuneRequest& request) {
  // The leanest plan: smallest subgroups, two buffers, no cache, delayed gradients. Report
  // host memory and GPU memory against it, and storage against all tiers together.
  Plan lean;
  lean.cluster = a.shape;
  lean.subgroup_elements = std::int64_t{1} << 20;
  lean.buffers = 2;
  lean.prefetch_depth = 1;
  lean.tiers = {PlanTier{"storage", "/", TierKind::nvme, 1.0, 0}};
  const HostMemoryNeed m = host_memory_need(a, lean, cpu_model_bytes(a, request));
  const double budget = static_cast<double>(host_budget(request));
  auto shortfall = [](const std::string& what, double need, double have, const std::string& detail,
                      const std::string& fix) {
    throw Error(what + " is short by " + format_bytes(need - have) + ": the leanest plan needs " +
                format_bytes(need) + " (" + detail + ") but " + format_bytes(have) + " is available; " + fix);
  };
  if (m.total() > budget)
    shortfall("host memory", m.total(), budget,
              "bf16 weights " + format_bytes(m.bf16_weights) + " + bf16 gradients " +
                  format_bytes(m.bf16_grads) + " + 2 pinned buffers " + format_bytes(m.pinned_buffers) +
                  " + CPU backend model " + format_bytes(m.cpu_model) + " per node",
              "add nodes (--nodes), or raise --host-memory-budget if the profile's host.available_bytes is "
              "too low");
  if (const std::optional<double> have = gpu_memory_budget(request)) {
    const GpuMemoryNeed need = gpu_memory_need(a, request.param_offload);
    if (need.total() > *have)
      shortfall("GPU memory", need.total(), *have, need.detail() + " per rank",
                gpu_memory_advice(a, request.param_offload, *have) +
                    " (--update-only skips this check: the update phase needs no GPU memory)");
  }
  const double R = static_cast<double>(a.shape.ranks_per_node);
  const double nodes = static_cast<double>(a.shape.nodes);
  const double state = R * static_cast<double>(a.params_per_rank) * kOptimizerStateBytes;
  double have = 0;
  std::string detail;
  for (const auto& t : request.profile.tiers) {
    // A remote tier is shared by all nodes: each node gets its share.
    const double per_node = static_cast<double>(t.free_bytes) / (t.kind == TierKind::remote ? nodes : 1.0);
    have += updated_in_place(t.kind) ? std::min(per_node, std::max(0.0, budget - m.total())) : per_node;
    detail += (detail.empty() ? "" : ", ") + t.name + " " + format_bytes(per_node);
  }
  if (state > have)
    throw Error("storage is short by " + format_bytes(state - have) + ": the optimizer state needs " +
                format_bytes(state) + " per node but the profile's tiers hold " + format_bytes(have) +
                " free per node (" + detail + "); add nodes or free space on the tiers");
  throw Error("no plan fits: every candidate exceeds host memory (" + format_bytes(budget) +
              " per node) or a tier's capacity once buffers and tier shares are added; raise "
              "--host-memory-budget or add nodes");
}

}  // namespace mlpo::tune
