#include "core/update_order.hpp"

#include <algorithm>

namespace mlpo {

bool SubgroupCache::contains(std::int64_t subgroup) const { return where_.count(subgroup) != 0; }

std::vector<UpdateStep> SubgroupCache::plan_iteration(const std::vector<std::int64_t>& order,
                                                      const std::function<bool(std::int64_t)>& resident) {
  std::vector<UpdateStep> steps;
  steps.reserve(order.size());
  for (std::int64_t s : order) {
    UpdateStep step;
    step.subgroup = s;
    if (resident && resident(s)) {
      step.resident = true;
      steps.push_back(step);
      continue;
    }
    auto it = where_.find(s);
    step.hit = it != where_.end();
    if (step.hit) {
      lru_.erase(it->second);
      where_.erase(it);
    }
    if (capacity_ > 0) {
      where_[s] = lru_.insert(lru_.end(), s);  // most recently updated
      step.stays_cached = true;
      if (static_cast<std::int64_t>(lru_.size()) > capacity_) {
        step.evicted = lru_.front();
        where_.erase(lru_.front());
        lru_.pop_front();
      }
    }
    steps.push_back(step);
  }
  return steps;
}

std::vector<std::int64_t> update_order(OrderPolicy policy, std::int64_t iteration, std::int64_t count) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) order[static_cast<std::size_t>(i)] = i;
  if (policy == OrderPolicy::alternating && iteration % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace mlpo
