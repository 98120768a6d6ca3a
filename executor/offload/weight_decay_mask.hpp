#pragma once
// WeightDecayMask: which elements of a rank's shard AdamW decays. Common practice (Hugging
// Face, Megatron) decays the matrices (embeddings included) but not the RMSNorm gains (nor
// biases, which LLaMA has none of); the training loop builds the mask from the model's
// parameter layout (ParameterLayout::norm_ranges), the update-only run decays everything.
//
// The mask is per element range, never per subgroup: subgroups cut across tensors, and an
// element's update must not depend on the plan. adamw_masked() splits a subgroup's range at
// the mask's boundaries and runs AdamW on each piece with the weight decay or with 0. AdamW
// is element-wise and its result does not depend on where a range starts (kernels/cpu/adamw.hpp),
// so the split changes no bit: the state is the same under every plan, tier split and
// subgroup size.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/bf16.hpp"
#include "core/rank_shard.hpp"
#include "kernels/cpu/adamw.hpp"

namespace mlpo::offload {

// Elements [begin, end).
struct ElementRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

class WeightDecayMask {
 public:
  WeightDecayMask() = default;  // every element decays
  // `exempt`: global element ranges without decay, in any order, may overlap or be empty;
  // the mask keeps their parts inside `shard`, in shard-local indices.
  WeightDecayMask(std::vector<ElementRange> exempt, const RankShard& shard);

  // Shard-local, sorted, disjoint, non-empty.
  const std::vector<ElementRange>& exempt() const { return exempt_; }
  std::int64_t exempt_elements() const;

  // Calls piece(offset, count, decays) for the consecutive pieces of shard-local elements
  // [begin, begin + count) that are all decayed or all exempt, in ascending order; offset is
  // relative to begin. count 0: no call.
  void for_each_piece(std::int64_t begin, std::int64_t count,
                      const std::function<void(std::int64_t, std::int64_t, bool)>& piece) const;

 private:
  std::vector<ElementRange> exempt_;
};

// AdamW (kernels/cpu/adamw.hpp, over `pool`) on the n shard-local elements from `begin`: p, m,
// v, the gradient and p_out (may be null) point at element `begin`; the gradient is grad16
// (bf16) unless grad32 is given (baseline). Elements the mask exempts use weight_decay 0.
void adamw_masked(ThreadPool& pool, const AdamWParams& adam, const WeightDecayMask& mask, std::int64_t begin,
                  std::size_t n, float* p, float* m, float* v, const bf16* grad16, const float* grad32,
                  bf16* p_out);

// The same on the calling thread for elements [at, at + n) of those arrays (begin + at in
// the shard): one thread's range of adamw_masked, one integrity chunk of checked_adamw.
void adamw_masked_range(const AdamWParams& adam, const WeightDecayMask& mask, std::int64_t begin,
                        std::size_t at, std::size_t n, float* p, float* m, float* v, const bf16* grad16,
                        const float* grad32, bf16* p_out);

}  // namespace mlpo::offload
