#pragma once
// HostMemoryNeed: the host memory one rank's offload engine takes for a plan, item by item —
// the pinned subgroup buffers, the host cache, the arrays of `memory` tiers and the state of
// `host` tiers (a file on a RAM file system, whose pages are memory) — so a plan that cannot
// fit is refused before anything is allocated, naming the plan fields to lower, instead of
// growing until the machine runs out of memory. Reusable: a whole-run check (weights,
// activations) adds its own items to the same list and calls check_host_memory once.

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/rank_shard.hpp"

namespace mlpo::offload {

struct HostMemoryItem {
  std::string what;   // "pinned subgroup buffers (buffers 4 x 192.0 MiB)"
  std::string field;  // the plan field (or flag) that sizes it: "buffers"
  std::uint64_t bytes = 0;
};

struct HostMemoryNeed {
  std::vector<HostMemoryItem> items;
  std::uint64_t total() const;
};

// What the RankEngine for (plan, shard) allocates in host memory. Subgroup buffers are sized
// from the shard (SubgroupLayout: a subgroup is never bigger than the shard) and the cache
// holds at most every subgroup of the shard. Pure: reads no file.
HostMemoryNeed host_memory_need(const Plan& plan, const RankShard& shard);

// Throws mlpo::Error when need.total() > available_bytes, listing every item with its bytes
// and field and saying which fields to lower. `who` starts the message ("rank 0").
void check_host_memory(const HostMemoryNeed& need, std::uint64_t available_bytes, const std::string& who);

}  // namespace mlpo::offload
