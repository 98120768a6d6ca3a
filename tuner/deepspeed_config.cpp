#include "tuner/deepspeed_config.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/internal/appendf.hpp"

namespace mlpo::tune {

namespace {

// Tensors DeepSpeed's optimizer swapper holds per sub-group for Adam: fp32 weights, the two
// moments and the gradient (its buffer_count must be at least this).
constexpr std::int64_t kTensorsPerSubgroup = 4;

void check_supported(const TuneRequest& request) {
  if (request.profile.gpus.empty())
    throw Error("--emit deepspeed: the profile has no GPU (" + request.profile.gpus_reason +
                "); DeepSpeed ZeRO-3 offload trains on GPUs: use a profile measured on a GPU node");
  if (request.options.update_only)
    throw Error("--emit deepspeed writes a training configuration: leave out --update-only");
}

// Every (subgroup size, I/O setting) the baseline can take on its tier.
std::vector<Plan> deepspeed_candidates(const Accounting& a, const TuneRequest& request) {
  std::vector<Plan> out;
  for (const std::int64_t sg : grid_subgroup_sizes(a)) {
    const std::optional<Plan> base = baseline_plan(a, request, sg);
    if (!base) continue;
    const std::size_t t = request.profile.tier_index(base->tiers[0].name);  // the baseline's: a profile tier
    auto settings = common_io_settings(request.profile, {t});
    if (settings.empty()) settings.push_back(base->io_setting());
    for (const IoSetting& setting : settings) {
      Plan p = *base;
      p.set_io_setting(setting);
      out.push_back(p);
    }
  }
  if (out.empty())
    throw Error(
        "--emit deepspeed: no single tier holds the optimizer state and the fp32 gradients, and DeepSpeed "
        "keeps them in one place (one nvme_path); add capacity or host memory (mlpo-tune --what-if shows "
        "what would fit)");
  return out;
}

}  // namespace

Json deepspeed_config(const Plan& plan, bool param_offload) {
  const PlanTier& tier = plan.tiers.at(0);
  const bool in_memory = updated_in_place(tier.kind);
  Json offload{{"device", in_memory ? "cpu" : "nvme"}, {"pin_memory", true}};
  if (!in_memory) {
    offload["nvme_path"] = tier.path;
    offload["buffer_count"] = kTensorsPerSubgroup * (plan.prefetch_depth + 1);
    offload["pipeline_read"] = plan.prefetch_depth > 0;
    offload["pipeline_write"] = true;
  }
  Json zero{{"stage", 3},
            {"contiguous_gradients", true},
            {"overlap_comm", true},
            {"sub_group_size", plan.subgroup_elements},
            {"offload_optimizer", offload}};
  // MLPO's ZeRO-3 (several ranks) keeps each rank's bf16 weight shard in host memory and
  // gathers one part at a time to the GPU: DeepSpeed's parameter offload to the CPU.
  if (param_offload || plan.cluster.ranks() > 1)
    zero["offload_param"] = Json{{"device", "cpu"}, {"pin_memory", true}};
  const ClusterShape& c = plan.cluster;
  Json config{{"train_batch_size", c.micro_batch * c.grad_accum * c.ranks()},
              {"train_micro_batch_size_per_gpu", c.micro_batch},
              {"gradient_accumulation_steps", c.grad_accum},
              {"gradient_clipping", 1.0},
              {"bf16", {{"enabled", true}}},
              {"optimizer",
               {{"type", "AdamW"},
                {"params", {{"lr", 1e-3}, {"betas", {0.9, 0.95}}, {"eps", 1e-8}, {"weight_decay", 0.1}}}}},
              {"zero_optimization", zero}};
  if (!in_memory)
    config["aio"] = Json{{"block_size", plan.io_block_size},
                         {"queue_depth", plan.io_queue_depth},
                         {"intra_op_parallelism", 1},
                         {"single_submit", false},
                         {"overlap_events", true}};
  return config;
}

DeepSpeedPlan deepspeed_plan(const TuneRequest& in) {
  TuneRequest request = in;
  request.options.param_offload = in.param_offload;
  check_supported(request);
  check_param_offload(request.param_offload, request.shape);
  const Accounting a = account(request.model, request.shape);
  const std::vector<Plan> candidates = deepspeed_candidates(a, request);
  if (request.progress)
    request.progress("simulating " + std::to_string(candidates.size()) +
                     " DeepSpeed configurations with SimGrid");
  const auto sims = sim::simulate_all(a, request.profile, candidates, request.options, request.jobs);
  std::size_t best = 0;
  for (std::size_t i = 1; i < sims.size(); ++i)
    if (score(sims[i].prediction) < score(sims[best].prediction)) best = i;
  DeepSpeedPlan out;
  out.plan = candidates[best];
  out.plan.prediction = sims[best].prediction;
  out.simulated = sims[best];
  out.config = deepspeed_config(out.plan, request.param_offload);
  out.candidates = candidates.size();
  return out;
}

std::string format_deepspeed(const DeepSpeedPlan& ds, const TuneResult* mlpo) {
  std::string out;
  const PlanTier& tier = ds.plan.tiers[0];
  const Json& offload = ds.config.at("zero_optimization").at("offload_optimizer");
  appendf(out, "DeepSpeed ZeRO-3: optimizer state on %s (tier %s%s%s), sub_group_size %lld",
          offload.at("device").get<std::string>().c_str(), tier.name.c_str(), tier.path.empty() ? "" : ", ",
          tier.path.c_str(), (long long)ds.plan.subgroup_elements);
  if (ds.config.contains("aio"))
    appendf(out, ", buffer_count %lld, aio blocks of %s at queue depth %lld",
            (long long)offload.at("buffer_count").get<std::int64_t>(),
            format_bytes(static_cast<double>(ds.plan.io_block_size)).c_str(),
            (long long)ds.plan.io_queue_depth);
  appendf(out, " (best of %zu simulated)\n", ds.candidates);
  const Prediction& p = ds.simulated.prediction;
  appendf(
      out,
      "  predicted iteration (MLPO's model of ZeRO-3 offload): %s = forward %s + backward %s + update %s\n",
      format_seconds(p.iteration_s).c_str(), format_seconds(p.forward_s).c_str(),
      format_seconds(p.backward_s).c_str(), format_seconds(p.update_s).c_str());
  if (mlpo) {
    const Prediction& m = mlpo->chosen.simulated.prediction;
    appendf(out,
            "  MLPO's own plan on this machine: %s = forward %s + backward %s + update %s, %.2fx faster\n",
            format_seconds(m.iteration_s).c_str(), format_seconds(m.forward_s).c_str(),
            format_seconds(m.backward_s).c_str(), format_seconds(m.update_s).c_str(),
            m.iteration_s > 0 ? p.iteration_s / m.iteration_s : 0.0);
  }
  return out;
}

}  // namespace mlpo::tune
