#include "executor/model/weight_provider.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::model {

std::string WeightPart::describe() const {
  switch (kind) {
    case Kind::embedding:
      return "embedding";
    case Kind::layer:
      return "layer " + std::to_string(layer);
    case Kind::head:
      return "head";
  }
  return "?";
}

std::vector<ParameterRange> part_ranges(const ParameterLayout& layout, WeightPart part) {
  switch (part.kind) {
    case WeightPart::Kind::embedding:
      return {layout.embedding_range()};
    case WeightPart::Kind::layer:
      return {layout.layer_range(part.layer)};
    case WeightPart::Kind::head:
      if (layout.tied()) return {layout.head_range(), layout.embedding_range()};
      return {layout.head_range()};
  }
  MLPO_CHECK(false, "unknown weight part");
}

std::int64_t part_elements(const ParameterLayout& layout, WeightPart part) {
  std::int64_t n = 0;
  for (const ParameterRange& r : part_ranges(layout, part)) n += r.count;
  return n;
}

std::int64_t largest_part_elements(const ParameterLayout& layout) {
  std::int64_t n =
      std::max(part_elements(layout, WeightPart::embedding()), part_elements(layout, WeightPart::head()));
  for (int l = 0; l < layout.layers(); ++l)
    n = std::max(n, part_elements(layout, WeightPart::transformer_layer(l)));
  return n;
}

std::vector<WeightPart> weight_walk(const ParameterLayout& layout, WeightPass pass) {
  const int layers = layout.layers();
  std::vector<WeightPart> walk;
  if (pass == WeightPass::forward) {
    walk.push_back(WeightPart::embedding());
    for (int l = 0; l < layers; ++l) walk.push_back(WeightPart::transformer_layer(l));
    walk.push_back(WeightPart::head());
  } else {
    walk.push_back(WeightPart::head());
    for (int l = layers - 1; l >= 0; --l) walk.push_back(WeightPart::transformer_layer(l));
  }
  return walk;
}

int part_index(const ParameterLayout& layout, WeightPart part) {
  const int layers = layout.layers();
  switch (part.kind) {
    case WeightPart::Kind::embedding:
      return 0;
    case WeightPart::Kind::layer:
      MLPO_CHECK(part.layer >= 0 && part.layer < layers,
                 "layer " + std::to_string(part.layer) + " of " + std::to_string(layers));
      return 1 + part.layer;
    case WeightPart::Kind::head:
      return layers + 1;
  }
  MLPO_CHECK(false, "unknown weight part");
}

void PartWeights::add(ParameterRange range, Tensor data) {
  MLPO_CHECK(count_ < static_cast<int>(pieces_.size()), "a part has at most two ranges");
  MLPO_CHECK(data.numel() == range.count, "part piece of " + std::to_string(data.numel()) +
                                              " elements for a range of " + std::to_string(range.count));
  pieces_[static_cast<std::size_t>(count_++)] = Piece{range, data};
}

Tensor PartWeights::entry(const ParameterEntry& e) const {
  for (int i = 0; i < count_; ++i) {
    const Piece& p = pieces_[static_cast<std::size_t>(i)];
    if (e.offset >= p.range.offset && e.offset + e.numel() <= p.range.offset + p.range.count) {
      const std::int64_t at = e.offset - p.range.offset;
      if (e.shape.size() == 1) return p.data.slice(at, {e.shape[0]});
      return p.data.slice(at, {e.shape[0], e.shape[1]});
    }
  }
  MLPO_CHECK(false, "weight " + e.name + " is not in the acquired part");
}

}  // namespace mlpo::model
