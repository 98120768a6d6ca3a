#include "executor/train/internal/weight_decay_scope.hpp"

#include <vector>

#include "core/error.hpp"

namespace mlpo::train {

WeightDecayScope parse_weight_decay_scope(const std::string& text, const std::string& option) {
  if (text == "matrices") return WeightDecayScope::matrices;
  if (text == "all") return WeightDecayScope::all;
  throw Error(option + ": unknown value '" + text +
              "'; use matrices (every weight but the RMSNorm gains, the default) or all (norm gains too)");
}

const char* to_string(WeightDecayScope scope) { return scope == WeightDecayScope::all ? "all" : "matrices"; }

offload::WeightDecayMask weight_decay_mask(WeightDecayScope scope, const model::ParameterLayout& layout,
                                           const RankShard& shard) {
  if (scope == WeightDecayScope::all) return {};
  std::vector<offload::ElementRange> exempt;
  for (const model::ParameterRange& r : layout.norm_ranges())
    exempt.push_back({r.offset, r.offset + r.count});
  return offload::WeightDecayMask(std::move(exempt), shard);
}

}  // namespace mlpo::train
