// The run log of a resumed run holds each step once: the steps a killed run logged after its
// last checkpoint, and a line torn by the kill, are dropped before the run logs again.
#include "executor/runlog/run_log.hpp"

#include <gtest/gtest.h>

#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::runlog {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

std::string steps_log(std::initializer_list<int> steps) {
  std::string text;
  for (int s : steps) text += Json{{"step", s}, {"loss", 1.0 / s}}.dump() + "\n";
  return text;
}

TEST(RunLog, ResumeDropsTheStepsItComputesAgainAndATornLine) {
  test::TempDir dir;
  const std::string path = dir / "run.jsonl";
  test::write_file(path, steps_log({1, 2, 3, 4, 5}) + "{\"step\": 6, \"lo");
  RunLog log(path, true);
  log.write(Json{{"step", 4}, {"loss", 0.25}});
  log.write(Json{{"step", 5}, {"loss", 0.2}});
  EXPECT_EQ(test::read_file(path), steps_log({1, 2, 3, 4, 5}));
}

TEST(RunLog, FreshRunTruncatesAndAnUntouchedLogStays) {
  test::TempDir dir;
  const std::string path = dir / "run.jsonl";
  test::write_file(path, steps_log({1, 2, 3}));
  { RunLog unused(path, false); }  // nothing logged: an existing log is left alone
  EXPECT_EQ(test::read_file(path), steps_log({1, 2, 3}));
  RunLog log(path, false);
  log.write(Json{{"step", 1}, {"loss", 1.0}});
  EXPECT_EQ(test::read_file(path), steps_log({1}));
}

TEST(RunLog, KeepsLinesThatAreNotStepRecords) {
  EXPECT_EQ(run_log_before("# note\n" + steps_log({1, 2, 3}) + "not json\n", 2),
            "# note\n" + steps_log({1}) + "not json\n");
}

}  // namespace
}  // namespace mlpo::runlog
