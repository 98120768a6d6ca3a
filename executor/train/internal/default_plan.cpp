#include "executor/train/internal/default_plan.hpp"

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"

namespace mlpo::train {

Plan default_plan(const ModelSpec& model, std::int64_t params, const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec)
    throw Error("default plan: cannot create the state directory " + state_dir + " (" + ec.message() +
                "); pass --plan or --state-dir");
  Plan plan;
  plan.model_name = model.name;
  plan.model_params = params;
  const std::int64_t eighth = (params + 7) / 8;
  plan.subgroup_elements =
      std::clamp<std::int64_t>((eighth + 4095) / 4096 * 4096, 4096, std::int64_t{1} << 22);
  PlanTier disk;
  disk.name = "disk";
  disk.path = std::filesystem::absolute(state_dir).lexically_normal().string();
  disk.kind = TierKind::other;
  disk.fraction = 1.0;
  disk.concurrency_limit = 0;
  plan.tiers.push_back(disk);
  plan.host_cache_subgroups = 2;
  plan.buffers = 4;
  plan.prefetch_depth = 2;
  plan.direct_io = false;
  plan.order = OrderPolicy::alternating;
  plan.gradients = GradientPolicy::delayed;
  plan.explanation =
      Json{{"source", "mlpo-run default plan (no --plan given): one disk tier under " + state_dir}};
  validate(plan);
  return plan;
}

std::vector<std::string> default_plan_summary(const Plan& plan) {
  const PlanTier& tier = plan.tiers.front();
  return {"plan: none given; the default plan keeps the optimizer state in one tier, '" + tier.name +
              "' at " + tier.path,
          "plan: subgroups of " + std::to_string(plan.subgroup_elements) + " elements, host cache " +
              std::to_string(plan.host_cache_subgroups) + ", " + std::to_string(plan.buffers) +
              " buffers, prefetch depth " + std::to_string(plan.prefetch_depth) + ", order " +
              to_string(plan.order),
          "plan: untuned; mlpo-profile + mlpo-tune make one for this machine (--save-plan FILE writes "
          "this one)"};
}

}  // namespace mlpo::train
