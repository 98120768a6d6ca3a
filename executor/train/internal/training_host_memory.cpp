#include "executor/train/internal/training_host_memory.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/units.hpp"
#include "executor/model/parameter_layout.hpp"
#include "core/rank_shard.hpp"
#include "executor/offload/rank_engine.hpp"

namespace mlpo::train {

namespace {

// Items the plan sizes carry "plan " + the field; the refusal lists those fields together.
const std::string kPlanField = "plan ";

std::string bytes_text(std::uint64_t n) { return format_bytes(static_cast<double>(n)); }

std::uint64_t positive(std::int64_t n) { return static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)); }

std::int64_t largest_range(const model::ParameterLayout& layout) {
  std::int64_t n = std::max(layout.embedding_range().count, layout.head_range().count);
  for (int l = 0; l < layout.layers(); ++l) n = std::max(n, layout.layer_range(l).count);
  return n;
}

// The model's buffers on the CPU backend, whose device memory is host memory; each item names
// the flag that shrinks it ("" when none does).
void add_cpu_model(offload::HostMemoryNeed& need, const model::ModelShape& shape,
                   const compute::TrainingFootprint& f) {
  model::DeviceMemoryNeed m = compute::training_device_memory(shape, f, 0);
  // The resident provider's load staging chunk: training uploads bf16 directly, never through it.
  if (compute::weight_slots(f) == 0) m.activations -= (std::int64_t{1} << 20) * 4;
  const bool can_offload = !f.param_offload && f.ranks == 1;
  std::string gradient_fix;
  if (!compute::streams_gradients(f))
    gradient_fix = f.grad_accum > 1
                       ? (can_offload ? "use --grad-accum 1 with --param-offload" : "use --grad-accum 1")
                       : "use --param-offload";
  need.items.push_back(
      {"model weights (bf16, CPU backend)", can_offload ? "use --param-offload" : "", positive(m.weights)});
  need.items.push_back({"model gradients (fp32, CPU backend)", gradient_fix, positive(m.gradients)});
  need.items.push_back({"activations (micro-batch " + std::to_string(f.micro_batch) + " x seq-len " +
                            std::to_string(shape.seq_len) + ", CPU backend)",
                        "lower --micro-batch or --seq-len", positive(m.activations)});
}

}  // namespace

offload::HostMemoryNeed training_host_memory(const model::ModelShape& shape,
                                             const compute::TrainingFootprint& footprint, const Plan& plan,
                                             const RankShard& shard, bool cpu_backend) {
  offload::HostMemoryNeed need;
  if (cpu_backend) add_cpu_model(need, shape, footprint);
  const model::ParameterLayout layout(shape);
  const auto shard_elements = static_cast<std::uint64_t>(shard.elements);
  // The update's output (bf16 weights) and input (bf16 gradient); ZeRO-3 also sums the gradient
  // shard in fp32 through two fp32 staging buffers of the largest range (GradientHandover) and
  // gathers the weights through two bf16 host buffers of it (GatheredWeights).
  std::uint64_t host = shard_elements * 2 * 2;
  if (footprint.ranks > 1) host += shard_elements * 4 + 2 * positive(largest_range(layout)) * (4 + 2);
  // The gradient-norm chunk sums over all parameters and one micro-batch's token ids.
  host += positive((layout.total() + kNormChunk - 1) / kNormChunk) * 8 +
          positive(static_cast<std::int64_t>(footprint.micro_batch) * shape.seq_len) * 4 * 2;
  need.items.push_back(
      {"bf16 weights and gradients in host memory (the update's output and input)", "", host});
  for (auto& item : offload::host_memory_need(plan, shard).items) {
    item.field = kPlanField + item.field;
    need.items.push_back(std::move(item));
  }
  return need;
}

std::optional<HostMemoryAvailable> host_memory_for_run(const Plan& plan, const RankShard& shard,
                                                       const std::string& run, std::uint64_t limit) {
  std::optional<HostMemoryAvailable> out;
  if (const std::optional<std::int64_t> available = host_memory_available())
    out = HostMemoryAvailable{positive(*available) + offload::host_tier_bytes_held(plan, shard, run),
                              "MemAvailable"};
  if (limit > 0 && (!out || limit < out->bytes)) out = HostMemoryAvailable{limit, "--host-memory-limit"};
  return out;
}

std::string check_training_host_memory(const offload::HostMemoryNeed& need, int ranks_here,
                                       const HostMemoryAvailable& available, const std::string& who) {
  const std::uint64_t total = need.total() * static_cast<std::uint64_t>(std::max(ranks_here, 1));
  std::string parts, fixes, fields;
  for (const auto& item : need.items) {
    if (item.bytes == 0) continue;
    parts += (parts.empty() ? "" : ", ") + item.what + " " + bytes_text(item.bytes);
    const bool plan_field = item.field.rfind(kPlanField, 0) == 0;
    std::string& list = plan_field ? fields : fixes;
    const std::string fix = plan_field ? item.field.substr(kPlanField.size()) : item.field;
    if (!fix.empty() && list.find(fix) == std::string::npos) list += (list.empty() ? "" : ", ") + fix;
  }
  if (!fields.empty())
    fixes += (fixes.empty() ? "" : "; ") + std::string("lower the plan's ") + fields +
             " (mlpo-tune --host-memory-budget plans within a budget)";
  const std::string per_rank = ranks_here > 1 ? " (" + std::to_string(ranks_here) + " ranks on this node x " +
                                                    bytes_text(need.total()) + ")"
                                              : "";
  if (total <= available.bytes)
    return "host memory: the run needs " + bytes_text(total) + per_rank + " of " +
           bytes_text(available.bytes) + " available (" + available.source + "): " + parts;
  throw Error(who + ": the run needs " + bytes_text(total) + " of host memory" + per_rank + ", " +
              bytes_text(available.bytes) + " are available (" + available.source + "; short by " +
              bytes_text(total - available.bytes) + "): " + parts + "; to fit: " +
              (fixes.empty() ? std::string("use more ranks") : fixes) + "; or free host memory");
}

}  // namespace mlpo::train
