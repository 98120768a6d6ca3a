#pragma once
// MicroBatchGradientSum: adds up the gradients of a step's micro-batches in the one fixed
// summation order of the communicators (comm::tree_sum's halving tree: sum[lo, hi) =
// sum[lo, mid) + sum[mid, hi), mid = lo + ceil((hi - lo) / 2)), evaluated incrementally as
// the micro-batches arrive one after another. That order is what makes a data-parallel run
// bitwise equal to one process: rank r sums its block of a contiguous micro-batches with this
// tree, the ranks' sums are reduced with the same tree over ranks, and for P ranks a power of
// two, a block of G/P contiguous leaves is a subtree of the halving tree over all G micro-
// batches (rank_order_sum.hpp). It holds for any count of micro-batches per rank.
//
// Each micro-batch's gradient is computed into the `leaf` buffer (the model's gradient
// buffer, zeroed by the caller before each micro-batch). As backward finishes a range of it,
// add() folds that range into the partial sums: the tree is walked in post-order, so a leaf
// that is a left child is copied into a partial-sum buffer and a right child is added to the
// partial sum on its left (then completed subtrees are added up the stack).
//
// Cost: none for one micro-batch (the leaf is the sum). Otherwise floor(log2 n) extra fp32
// buffers of the gradient's size on the device (extra_buffers(); the halving tree's left
// subtrees are the larger ones, so a left leaf never sits at the deepest level), and per
// micro-batch one copy (left leaves) or one or more adds (right leaves) per element.

#include <cstdint>
#include <vector>

#include "executor/model/parameter_layout.hpp"
#include "kernels/backend.hpp"

namespace mlpo::compute {

class MicroBatchGradientSum {
 public:
  // `leaf`: the buffer each micro-batch's gradient lands in (type A, flat). n >= 1.
  MicroBatchGradientSum(Backend& backend, Tensor leaf, int micro_batches);

  int micro_batches() const { return static_cast<int>(merges_.size()); }
  int extra_buffers() const { return static_cast<int>(partial_.size()); }
  // extra_buffers() of a sum over `micro_batches`, known before any allocation.
  static int buffers_for(int micro_batches);

  // Micro-batch `index` (0, 1, ... in order) has finished `range` in the leaf. Returns the
  // range of the complete sum over all micro-batches when `index` is the last one (in the
  // leaf itself for a single micro-batch, else in a partial-sum buffer); an empty Tensor
  // before that.
  Tensor add(int index, model::ParameterRange range);

 private:
  Backend& backend_;
  Tensor leaf_;
  std::vector<int> depth_before_;  // partial sums on the stack before leaf i arrives
  std::vector<int> merges_;        // additions right after leaf i arrives
  std::vector<DeviceBuffer> partial_;
  std::vector<Tensor> partial_views_;
};

}  // namespace mlpo::compute
