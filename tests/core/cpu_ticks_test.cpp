// CPU ticks (core/cpu_ticks.hpp): the hypervisor's and the idle share of the CPU time between two reads of
// /proc/stat's aggregate line.
#include "core/cpu_ticks.hpp"

#include <gtest/gtest.h>

namespace mlpo {
namespace {

TEST(CpuSteal, ParsesTheAggregateLineAndSumsItsFirstEightFields) {
  // As a 2-vCPU VM writes it: the aggregate first, then one line per CPU; guest time (the
  // ninth and tenth fields) is already counted in user and nice.
  const auto t = parse_cpu_ticks(
      "cpu  1108922 0 239483 561620 188423 0 1390 20210 7 9\n"
      "cpu0 550508 0 108400 323338 68422 0 133 9392 0 0\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->total, 1108922 + 239483 + 561620 + 188423 + 1390 + 20210);
  EXPECT_EQ(t->steal, 20210);
  EXPECT_EQ(t->idle, 561620 + 188423);  // idle + iowait
  // The aggregate line need not be the first; a per-CPU line alone is not it.
  EXPECT_EQ(parse_cpu_ticks("intr 1 2\ncpu  1 2 3 4 5 6 7 8\n")->steal, 8);
  EXPECT_FALSE(parse_cpu_ticks("cpu0 1 2 3 4 5 6 7 8\n").has_value());
  // Kernels before 2.6.11 have no steal field; garbage is no figure either.
  EXPECT_FALSE(parse_cpu_ticks("cpu  1 2 3 4 5 6 7\n").has_value());
  EXPECT_FALSE(parse_cpu_ticks("cpu  1 2 x 4 5 6 7 8\n").has_value());
  EXPECT_FALSE(parse_cpu_ticks("").has_value());
}

TEST(CpuSteal, TheShareIsStolenTicksOverAllTicksBetweenTwoReads) {
  const CpuTicks before{1000, 10}, after{1200, 40};
  EXPECT_DOUBLE_EQ(*steal_share(before, after), 30.0 / 200.0);
  EXPECT_FALSE(steal_share(before, before).has_value());  // no tick passed
  EXPECT_FALSE(steal_share(std::nullopt, after).has_value());
  EXPECT_FALSE(steal_share(after, before).has_value());  // not a later read
}

TEST(CpuSteal, TheIdleShareIsIdleAndIowaitTicksOverAllTicks) {
  CpuTicks before{1000, 10, 300}, after{1200, 40, 350};
  EXPECT_DOUBLE_EQ(*idle_share(before, after), 50.0 / 200.0);
  EXPECT_FALSE(idle_share(before, before).has_value());
  EXPECT_FALSE(idle_share(after, before).has_value());
  EXPECT_FALSE(idle_share(before, std::nullopt).has_value());
}

TEST(CpuSteal, ThisMachinesProcStatReadsWhereItExists) {
  const auto now = read_cpu_ticks();
  if (!now) GTEST_SKIP() << "no readable /proc/stat here";
  EXPECT_GT(now->total, 0);
  EXPECT_GE(now->total, now->steal);
}

}  // namespace
}  // namespace mlpo
