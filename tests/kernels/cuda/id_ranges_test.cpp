// IdRanges (kernels/cuda/internal/id_ranges.hpp): the host-side record that lets the CUDA backend check
// uploaded token ids without reading them back. Pure bookkeeping, so these run without a GPU
// (addresses below are never dereferenced).
#include "kernels/cuda/internal/id_ranges.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace mlpo::gpu {
namespace {

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(IdRanges, AnUploadIsKnownWithItsSmallestAndLargestId) {
  IdRanges ids;
  const std::vector<std::int32_t> host{5, 2, 9, 2};
  ids.record(at(0x1000), 4, host.data());
  const auto range = ids.find(at(0x1000), 4);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->min, 2);
  EXPECT_EQ(range->max, 9);
}

TEST(IdRanges, OnlyTheExactTensorIsKnownNotAPartOrAnotherAddress) {
  IdRanges ids;
  const std::vector<std::int32_t> host{1, 2, 3, 4};
  ids.record(at(0x1000), 4, host.data());
  EXPECT_FALSE(ids.find(at(0x1000), 3).has_value());
  EXPECT_FALSE(ids.find(at(0x1004), 3).has_value());
  EXPECT_FALSE(ids.find(at(0x2000), 4).has_value());
}

TEST(IdRanges, AnyOverlappingWriteForgetsTheUpload) {
  IdRanges ids;
  const std::vector<std::int32_t> host{1, 2, 3, 4};
  ids.record(at(0x1000), 4, host.data());
  ids.record(at(0x2000), 4, host.data());
  ids.forget(at(0x100c), 1);  // the last byte range of the first upload
  EXPECT_FALSE(ids.find(at(0x1000), 4).has_value());
  EXPECT_TRUE(ids.find(at(0x2000), 4).has_value());
  ids.forget(at(0x1ff0), 16);  // ends where the second begins: no overlap
  EXPECT_TRUE(ids.find(at(0x2000), 4).has_value());
}

TEST(IdRanges, ANewUploadReplacesTheOldRangeAtTheSameAddress) {
  IdRanges ids;
  const std::vector<std::int32_t> first{1, 2}, second{-3, 40};
  ids.record(at(0x1000), 2, first.data());
  ids.record(at(0x1000), 2, second.data());
  const auto range = ids.find(at(0x1000), 2);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->min, -3);
  EXPECT_EQ(range->max, 40);
}

TEST(IdRanges, KeepsAtMostItsLimitDroppingTheOldest) {
  IdRanges ids;
  const std::vector<std::int32_t> host{7};
  for (std::uintptr_t i = 0; i <= IdRanges::kMaxEntries; ++i) ids.record(at(0x1000 + 16 * i), 1, host.data());
  EXPECT_FALSE(ids.find(at(0x1000), 1).has_value());
  EXPECT_TRUE(ids.find(at(0x1000 + 16 * IdRanges::kMaxEntries), 1).has_value());
}

}  // namespace
}  // namespace mlpo::gpu
