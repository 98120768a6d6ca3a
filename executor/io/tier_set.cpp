#include "executor/io/tier_set.hpp"

#include <set>
#include <string>

#include "core/error.hpp"
#include "executor/io/capacity.hpp"

namespace mlpo::io {

TierSet::TierSet(std::vector<Tier> tiers, TierSetOptions options) {
  std::set<std::string> names;
  for (const Tier& t : tiers) {
    validate(t);
    if (!names.insert(t.name).second)
      throw Error("two tiers are named '" + t.name + "': give each tier its own name");
  }
  for (Tier& t : tiers)
    tiers_.push_back(std::make_unique<TierIo>(std::move(t), options.pool, options.diagnostics));
}

TierIo& TierSet::at(std::string_view name) {
  for (auto& t : tiers_) {
    if (t->tier().name == name) return *t;
  }
  throw Error("no tier named '" + std::string(name) + "'");
}

void TierSet::check_capacity(std::span<const std::uint64_t> bytes_per_tier) const {
  MLPO_CHECK(bytes_per_tier.size() == tiers_.size(), "check_capacity needs one byte count per tier");
  std::vector<CapacityNeed> needs;
  for (std::size_t i = 0; i < tiers_.size(); ++i) needs.push_back({&tiers_[i]->tier(), bytes_per_tier[i]});
  io::check_capacity(needs);
}

}  // namespace mlpo::io
