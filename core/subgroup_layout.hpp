#pragma once
// SubgroupLayout: a rank's flat fp32 optimizer state (master weights p, Adam moments m and
// v) cut into subgroups of `subgroup_elements` elements (at most the shard's elements: a
// plan's subgroup size larger than the shard gives one subgroup of the shard's size, and
// buffers are sized from that); the last one may be shorter. On a
// storage tier a subgroup occupies one extent holding p, m and v back to back, each array
// padded to 4 KiB so the extent and all three arrays stay O_DIRECT-aligned:
//
//   extent = [ p: round_up(4n, 4096) | m: same | v: same ]     (n = elements of the subgroup)
//
// With gradients flushed as fp32 (baseline mode) a subgroup also has a gradient extent of
// round_up(4n, 4096) bytes in a separate gradient file.
//
// The one cut of a shard into subgroups: the offload engine (StateStore, the pipeline's
// buffers) and the simulator's Workload both use it, so they move the same extents.

#include <cstdint>

namespace mlpo {

inline constexpr std::int64_t kExtentAlign = 4096;

struct Subgroup {
  std::int64_t index = 0;
  std::int64_t begin = 0;  // first element, local to the rank's shard
  std::int64_t elements = 0;
};

class SubgroupLayout {
 public:
  SubgroupLayout(std::int64_t shard_elements, std::int64_t subgroup_elements);

  std::int64_t count() const { return count_; }
  std::int64_t subgroup_elements() const { return subgroup_elements_; }
  std::int64_t shard_elements() const { return shard_elements_; }
  Subgroup subgroup(std::int64_t index) const;

  // Bytes of one padded fp32 array of a full subgroup, and of its (p, m, v) extent.
  std::int64_t array_bytes() const { return array_bytes_; }
  std::int64_t extent_bytes() const { return 3 * array_bytes_; }

 private:
  std::int64_t shard_elements_;
  std::int64_t subgroup_elements_;
  std::int64_t count_;
  std::int64_t array_bytes_;
};

}  // namespace mlpo
