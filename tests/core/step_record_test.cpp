// The run log's step record (core/step_record) and its one reader (core/run_log_reader): the
// lines both writers produce read back to the same bytes, and a step logged twice keeps its
// last record.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "core/run_log_reader.hpp"
#include "core/step_record.hpp"

namespace mlpo {
namespace {

std::string write_log(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A training line as train::step_record writes it (a checkpoint, an evaluation, ZeRO-3
// fields, --param-offload), byte for byte: sorted keys, lr a float widened to double.
const std::string kTrainingLine =
    R"({"adam_s":0.05,"backward_s":0.2,"cache_hits":2,"checkpoint_bytes":123456,"checkpoint_s":0.2,)"
    R"("clip_scale":1.0,"cpu_steal":0.01,"elements":1048576,"eval_loss":5.5,"eval_s":0.1,)"
    R"("exchange_cpu_s":0.03,"forward_s":0.1,"gather_wait_s":0.02,"grad_norm":1.5,)"
    R"("gradient_copy_wait_s":0.0,"loss":5.25,"lr":0.0010000000474974513,"prefetch_stall_s":0.0,)"
    R"("reads":3,"step":4,"step_s":0.5,"tiers":[{"busy_s":0.12,"name":"nvme","read_bytes":4096,)"
    R"("slot_wait_s":0.01,"write_bytes":8192}],"tokens":256.0,"tokens_per_s":512.5,"update_s":0.15,)"
    R"("weight_demand_fetches":3,"weight_fetch_bytes":65536,"weights_to_device_s":0.01,"writes":3})";

// An update-only line of two ranks with a profile (the bound), a block device and a mapped
// host tier.
const std::string kUpdateOnlyLine =
    R"({"achieved_over_bound":2.0,"adam_bound_s":0.2,"adam_s":0.2,"backward_s":0.3,"bound_s":0.2,)"
    R"("cache_hits":0,"elements":4096,"forward_s":0.0,"grad_norm":0.75,"gradient_flush_s":0.0,)"
    R"("ideal_bound_s":0.15,"io_bound_s":0.1,"loss":null,"prefetch_stall_s":0.05,)"
    R"("rank_update_s":[0.4,0.35],"reads":0,"step":2,"tiers":[{"busy_s":0.3,"device":{"busy_s":0.25,)"
    R"("read_bytes":4096,"write_bytes":8192},"name":"nvme","read_bytes":100,"slot_wait_s":0.02,)"
    R"("write_bytes":200},{"busy_s":0.0,"in_place":true,"name":"host","read_bytes":0,)"
    R"("slot_wait_s":0.0,"write_bytes":0}],"update_cpu_idle":0.125,"update_s":0.4,"writes":0})";

TEST(StepRecord, EveryFieldReadsBackToTheSameBytes) {
  for (const std::string& line : {kTrainingLine, kUpdateOnlyLine}) {
    ASSERT_EQ(Json::parse(line).dump(), line);  // the line is as nlohmann writes it
    EXPECT_EQ(to_json(step_record_from_json(Json::parse(line), "log:1")).dump(), line);
  }
}

TEST(StepRecord, UpdateOnlyLinesHaveNoLossAndNoTrainingFields) {
  const StepRecord r = step_record_from_json(Json::parse(kUpdateOnlyLine), "log:1");
  EXPECT_FALSE(r.loss);
  EXPECT_FALSE(r.lr);
  EXPECT_FALSE(r.step_s);
  ASSERT_EQ(r.tiers.size(), 2u);
  EXPECT_FALSE(r.tiers[0].in_place);
  EXPECT_TRUE(r.tiers[1].in_place);
  ASSERT_TRUE(r.tiers[0].device);
  EXPECT_EQ(r.tiers[0].device->write_bytes, 8192);
}

TEST(StepRecord, AStepThatIsNotANonNegativeIntegerIsAnErrorNamingTheLine) {
  EXPECT_THROW(step_record_from_json(Json{{"step", -1}}, "log:3"), Error);
  try {
    step_record_from_json(Json{{"step", "x"}}, "log:3");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("log:3: field 'step'"), std::string::npos) << e.what();
  }
}

TEST(RunLogReader, AStepLoggedTwiceKeepsItsLastRecordInStepOrder) {
  // Steps 1-3, then a resume from the step-1 checkpoint logs steps 2 and 3 again; a header
  // line without "step" is no step.
  std::string text = "{\"run\":\"header\"}\n";
  for (const auto& [step, loss] :
       {std::pair{1, 6.0}, std::pair{2, 5.0}, std::pair{3, 4.0}, std::pair{2, 5.5}, std::pair{3, 4.5}})
    text += "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(loss) + "}\n";
  const std::vector<StepRecord> steps = read_step_records(write_log("resumed.jsonl", text));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step, 1);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 6.0);
  EXPECT_EQ(steps[1].step, 2);
  EXPECT_DOUBLE_EQ(*steps[1].loss, 5.5);
  EXPECT_EQ(steps[2].step, 3);
  EXPECT_DOUBLE_EQ(*steps[2].loss, 4.5);
}

TEST(RunLogReader, ALogWithoutStepsIsAnErrorNamingTheFile) {
  const std::string path = write_log("no-steps.jsonl", "{\"run\":\"header\"}\n\n");
  try {
    read_step_records(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-steps.jsonl: no step records"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mlpo
