#pragma once
// UpdateOrder and SubgroupCache: which subgroup is updated when, and which of them are
// served from the host-memory cache.
//
// The cache holds the `capacity` most recently updated subgroups (LRU). A subgroup updated
// while cached needs no read; a subgroup entering the cache pushes out the least recently
// updated one, which is written back then. A cached subgroup is never written while it
// stays cached (only on eviction or checkpoint). With the ascending order, the subgroups
// cached at the end of an iteration are the last ones, and are evicted before the next
// iteration reaches them; alternating the direction every iteration starts each iteration
// on exactly those subgroups, so the first `capacity` updates are hits.
//
// plan_iteration() is a pure function of (order, iteration, cache contents): the executor's
// UpdatePipeline executes the steps it returns, and the simulator's Workload replays an
// iteration through it, so both predict the same hits and write-backs without I/O.

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/plan.hpp"

namespace mlpo {

struct UpdateStep {
  std::int64_t subgroup = 0;
  bool resident = false;                // lives in process memory (memory tier): no I/O at all
  bool hit = false;                     // served from the cache: no read
  bool stays_cached = false;            // kept in the cache after its update: no write now
  std::optional<std::int64_t> evicted;  // pushed out of the cache by this step: written now
};

class SubgroupCache {
 public:
  explicit SubgroupCache(std::int64_t capacity) : capacity_(capacity) {}

  std::int64_t capacity() const { return capacity_; }
  bool contains(std::int64_t subgroup) const;
  // The cached subgroups, least recently updated first (a copy).
  std::vector<std::int64_t> lru_order() const { return {lru_.begin(), lru_.end()}; }

  // The steps of one iteration over `order` (every subgroup once); updates the cache's
  // contents as the steps will. Subgroups for which `resident` is true live in process
  // memory anyway and never enter the cache. O(1) per step, whatever the capacity.
  std::vector<UpdateStep> plan_iteration(const std::vector<std::int64_t>& order,
                                         const std::function<bool(std::int64_t)>& resident = {});

 private:
  std::int64_t capacity_;
  std::list<std::int64_t> lru_;  // least recently updated first
  std::unordered_map<std::int64_t, std::list<std::int64_t>::iterator>
      where_;  // subgroup -> its entry in lru_
};

// The subgroups in update order for `iteration` (0-based): ascending always, or ascending
// on even and descending on odd iterations.
std::vector<std::int64_t> update_order(OrderPolicy policy, std::int64_t iteration, std::int64_t count);

}  // namespace mlpo
