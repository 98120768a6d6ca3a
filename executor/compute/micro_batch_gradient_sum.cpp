#include "executor/compute/micro_batch_gradient_sum.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::compute {

namespace {

// Post-order of the halving tree over [lo, hi): a leaf pushes (true), an inner node adds its
// two children (false).
void post_order(int lo, int hi, std::vector<bool>& pushes) {
  if (hi - lo == 1) {
    pushes.push_back(true);
    return;
  }
  const int mid = lo + (hi - lo + 1) / 2;
  post_order(lo, mid, pushes);
  post_order(mid, hi, pushes);
  pushes.push_back(false);
}

}  // namespace

int MicroBatchGradientSum::buffers_for(int micro_batches) {
  MLPO_CHECK(micro_batches >= 1, "micro-batches per step must be >= 1");
  std::vector<bool> ops;
  post_order(0, micro_batches, ops);
  int depth = 0, most = 0;
  for (bool push : ops) {
    depth += push ? 1 : -1;
    most = std::max(most, depth);
  }
  return micro_batches == 1 ? 0 : most - 1;
}

MicroBatchGradientSum::MicroBatchGradientSum(Backend& backend, Tensor leaf, int micro_batches)
    : backend_(backend), leaf_(leaf) {
  MLPO_CHECK(micro_batches >= 1, "micro-batches per step must be >= 1");
  std::vector<bool> ops;
  post_order(0, micro_batches, ops);
  int depth = 0, most = 0;  // stack entries; the arriving leaf counts as one until merged or stored
  for (bool push : ops) {
    if (push) {
      depth_before_.push_back(depth);
      merges_.push_back(0);
      ++depth;
    } else {
      ++merges_.back();
      --depth;
    }
    most = std::max(most, depth);
  }
  // Stack positions 0 .. most-1; a left leaf is copied to position depth_before. With one
  // micro-batch the only leaf stays in `leaf`.
  const int buffers = micro_batches == 1 ? 0 : most - 1;
  MLPO_CHECK(buffers == buffers_for(micro_batches), "partial-sum buffer count");
  for (int i = 0; i < buffers; ++i) {
    partial_.push_back(backend.allocate(leaf.dtype, leaf.numel()));
    partial_views_.push_back(partial_.back().view(leaf.dtype, {leaf.numel()}));
  }
}

Tensor MicroBatchGradientSum::add(int index, model::ParameterRange range) {
  MLPO_CHECK(index >= 0 && index < micro_batches(), "micro-batch index " + std::to_string(index));
  const bool last = index == micro_batches() - 1;
  auto at = [&](const Tensor& t) { return t.slice(range.offset, {range.count}); };
  if (micro_batches() == 1) return at(leaf_);
  const int d = depth_before_[static_cast<std::size_t>(index)];
  const int m = merges_[static_cast<std::size_t>(index)];
  if (m == 0) {  // a left child: keep it until its sibling subtree is complete
    backend_.copy(at(partial_views_[static_cast<std::size_t>(d)]), at(leaf_));
    return {};
  }
  // A right child: add it to its left sibling, then finish every subtree it completes.
  Tensor top = at(partial_views_[static_cast<std::size_t>(d - 1)]);
  backend_.add(top, top, at(leaf_));
  for (int k = 2; k <= m; ++k) {
    Tensor left = at(partial_views_[static_cast<std::size_t>(d - k)]);
    backend_.add(left, left, top);
    top = left;
  }
  return last ? top : Tensor{};
}

}  // namespace mlpo::compute
