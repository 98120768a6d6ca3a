#include "executor/io/tier_layout.hpp"

#include <gtest/gtest.h>

namespace mlpo::io {
namespace {

// The on-disk names are a format: old runs' directories are found and cleaned by them, and
// docs/io.md documents them.
TEST(TierLayout, RunFilesLiveUnderMlpoRunAndSlotsBesideThem) {
  const std::filesystem::path tier = "/mnt/nvme";
  EXPECT_EQ(runs_directory(tier), "/mnt/nvme/mlpo");
  EXPECT_EQ(run_directory(tier, "train-h-7"), "/mnt/nvme/mlpo/train-h-7");
  EXPECT_EQ(state_file_name("train-h-7", 3), "mlpo/train-h-7/rank3.state");
  EXPECT_EQ(grad_file_name("train-h-7", 3), "mlpo/train-h-7/rank3.grad");
  EXPECT_EQ(run_file_name("bench", "probe"), "mlpo/bench/probe");
  EXPECT_EQ(tier / state_file_name("r", 0), run_directory(tier, "r") / "rank0.state");
  EXPECT_EQ(slot_directory(tier), "/mnt/nvme/.mlpo-slots");
}

}  // namespace
}  // namespace mlpo::io
