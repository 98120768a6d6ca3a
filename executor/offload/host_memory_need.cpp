#include "executor/offload/host_memory_need.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/offload/internal/placement_policy.hpp"
#include "core/subgroup_layout.hpp"
#include "executor/offload/update_pipeline.hpp"

namespace mlpo::offload {

std::uint64_t HostMemoryNeed::total() const {
  std::uint64_t sum = 0;
  for (const auto& item : items) sum += item.bytes;
  return sum;
}

HostMemoryNeed host_memory_need(const Plan& plan, const RankShard& shard) {
  const SubgroupLayout layout(shard.elements, plan.subgroup_elements);
  const bool fp32_grads = plan.gradients == GradientPolicy::flush_fp32;
  const auto buffer =
      static_cast<std::uint64_t>(layout.extent_bytes() + (fp32_grads ? layout.array_bytes() : 0));
  const std::int64_t cached = std::min(plan.host_cache_subgroups, layout.count());
  const std::string each = " x " + format_bytes(static_cast<double>(buffer)) + ")";

  HostMemoryNeed need;
  need.items.push_back({"pinned subgroup buffers (buffers " + std::to_string(plan.buffers) + each, "buffers",
                        buffer * static_cast<std::uint64_t>(plan.buffers)});
  if (cached > 0)
    need.items.push_back({"host cache (host_cache_subgroups " + std::to_string(cached) + each,
                          "host_cache_subgroups", buffer * static_cast<std::uint64_t>(cached)});
  std::vector<double> fractions;
  for (const auto& t : plan.tiers) fractions.push_back(t.fraction);
  const PlacementPolicy placement(fractions, layout.count());
  for (std::size_t i = 0; i < plan.tiers.size(); ++i) {
    const auto& t = plan.tiers[i];
    if (!updated_in_place(t.kind)) continue;
    const auto bytes = buffer * static_cast<std::uint64_t>(placement.subgroups_on(static_cast<int>(i)));
    if (bytes == 0) continue;
    const std::string where = t.kind == TierKind::memory ? "state arrays in process memory"
                                                         : "state file on a RAM file system, mapped";
    need.items.push_back({"tier '" + t.name + "' (" + to_string(t.kind) + "): " + where,
                          element_path("tiers", i) + ".fraction", bytes});
  }
  return need;
}

void check_host_memory(const HostMemoryNeed& need, std::uint64_t available_bytes, const std::string& who) {
  const std::uint64_t total = need.total();
  if (total <= available_bytes) return;
  std::string list;
  std::string fields;
  for (const auto& item : need.items) {
    list += "\n  " + format_bytes(static_cast<double>(item.bytes)) + "  " + item.what;
    if (item.bytes > 0 && fields.find(item.field) == std::string::npos)
      fields += (fields.empty() ? "" : ", ") + item.field;
  }
  throw Error(who + ": the plan needs " + format_bytes(static_cast<double>(total)) + " of host memory, " +
              format_bytes(static_cast<double>(available_bytes)) + " are available (MemAvailable):" + list +
              "\nlower " + fields + " (or subgroup_elements) in the plan, or free host memory");
}

}  // namespace mlpo::offload
