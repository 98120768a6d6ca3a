#include <gtest/gtest.h>

#include "core/error.hpp"
#include "executor/train/internal/lr_schedule.hpp"

namespace mlpo::train {
namespace {

TEST(LrSchedule, WarmsUpLinearlyThenDecaysByCosineToTheFloor) {
  LrSchedule s{1e-3, 1e-4, 10, 110};
  EXPECT_FLOAT_EQ(s.at(1), 1e-4f);
  EXPECT_FLOAT_EQ(s.at(5), 5e-4f);
  EXPECT_FLOAT_EQ(s.at(10), 1e-3f);
  EXPECT_FLOAT_EQ(s.at(60), 5.5e-4f);  // halfway through the cosine: the mean of max and min
  EXPECT_LT(s.at(100), s.at(60));
  EXPECT_FLOAT_EQ(s.at(110), 1e-4f);
  EXPECT_FLOAT_EQ(s.at(500), 1e-4f);
}

TEST(LrSchedule, NoWarmupStartsAtThePeak) {
  LrSchedule s{2e-3, 0, 0, 100};
  EXPECT_FLOAT_EQ(s.at(0), 2e-3f);
  EXPECT_GT(s.at(1), 1.99e-3f);
  EXPECT_FLOAT_EQ(s.at(100), 0.0f);
}

TEST(LrSchedule, RejectsAFloorAboveThePeak) {
  EXPECT_THROW(validate(LrSchedule{1e-3, 2e-3, 0, 10}), Error);
  EXPECT_THROW(validate(LrSchedule{0, 0, 0, 10}), Error);
  EXPECT_NO_THROW(validate(LrSchedule{1e-3, 1e-4, 5, 10}));
}

}  // namespace
}  // namespace mlpo::train
