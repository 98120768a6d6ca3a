// The DeepSpeed configuration: for a fixed profile the emitted ds_config.json is exactly the
// golden file; every object carries only DeepSpeed's documented keys with their JSON types;
// what DeepSpeed cannot run is refused, not guessed.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/deepspeed_config.hpp"

namespace mlpo::tune {
namespace {

TuneRequest example_request() {
  TuneRequest r;
  r.model = find_preset("llama2-70b");
  r.shape = ClusterShape{2, 4, 1, 0, 1};
  r.profile = load_profile(std::string(MLPO_SOURCE_DIR) + "/profiles/data/example-cluster-node.json");
  return r;
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(DeepSpeedConfig, MatchesTheGoldenFileForTheExampleProfile) {
  const DeepSpeedPlan ds = deepspeed_plan(example_request());
  const Json golden = read_json(std::string(MLPO_SOURCE_DIR) + "/tests/tuner/data/ds_config_llama2-70b.json");
  EXPECT_EQ(ds.config, golden) << ds.config.dump(2);
  EXPECT_EQ(ds.plan.mode, PlanMode::baseline);
  EXPECT_GT(ds.simulated.prediction.iteration_s, 0);
}

// Each object's keys and the JSON type each must have ("i" integer, "f" number, "b" bool,
// "s" string, "o" object, "a" array), as DeepSpeed's config classes read them.
void expect_keys(const Json& object, const std::map<std::string, char>& keys, const std::string& where) {
  EXPECT_EQ(object.size(), keys.size()) << where << ": " << object.dump();
  for (const auto& [key, type] : keys) {
    ASSERT_TRUE(object.contains(key)) << where << "." << key;
    const Json& v = object.at(key);
    const bool ok = type == 'i'   ? v.is_number_integer()
                    : type == 'f' ? v.is_number()
                    : type == 'b' ? v.is_boolean()
                    : type == 's' ? v.is_string()
                    : type == 'o' ? v.is_object()
                                  : v.is_array();
    EXPECT_TRUE(ok) << where << "." << key << " should be of type " << type << ": " << v.dump();
  }
}

TEST(DeepSpeedConfig, CarriesExactlyTheDocumentedKeysAndTypes) {
  const Json c = deepspeed_plan(example_request()).config;
  expect_keys(c,
              {{"train_batch_size", 'i'},
               {"train_micro_batch_size_per_gpu", 'i'},
               {"gradient_accumulation_steps", 'i'},
               {"gradient_clipping", 'f'},
               {"bf16", 'o'},
               {"optimizer", 'o'},
               {"zero_optimization", 'o'},
               {"aio", 'o'}},
              "top");
  expect_keys(c.at("bf16"), {{"enabled", 'b'}}, "bf16");
  expect_keys(c.at("optimizer"), {{"type", 's'}, {"params", 'o'}}, "optimizer");
  expect_keys(c.at("optimizer").at("params"),
              {{"lr", 'f'}, {"betas", 'a'}, {"eps", 'f'}, {"weight_decay", 'f'}}, "optimizer.params");
  const Json& zero = c.at("zero_optimization");
  expect_keys(zero,
              {{"stage", 'i'},
               {"contiguous_gradients", 'b'},
               {"overlap_comm", 'b'},
               {"sub_group_size", 'i'},
               {"offload_optimizer", 'o'},
               {"offload_param", 'o'}},  // several ranks: the weight shards live in host memory
              "zero_optimization");
  expect_keys(zero.at("offload_param"), {{"device", 's'}, {"pin_memory", 'b'}}, "offload_param");
  expect_keys(zero.at("offload_optimizer"),
              {{"device", 's'},
               {"nvme_path", 's'},
               {"pin_memory", 'b'},
               {"buffer_count", 'i'},
               {"pipeline_read", 'b'},
               {"pipeline_write", 'b'}},
              "offload_optimizer");
  expect_keys(c.at("aio"),
              {{"block_size", 'i'},
               {"queue_depth", 'i'},
               {"intra_op_parallelism", 'i'},
               {"single_submit", 'b'},
               {"overlap_events", 'b'}},
              "aio");
  EXPECT_EQ(c.at("train_batch_size").get<std::int64_t>(), 8);  // 1 x 1 x 2 nodes x 4 GPUs
  EXPECT_GE(zero.at("offload_optimizer").at("buffer_count").get<std::int64_t>(), 4);  // Adam's 4 tensors
}

TEST(DeepSpeedConfig, AStateInHostMemoryIsCpuOffloadWithoutAio) {
  TuneRequest r = example_request();
  r.baseline_tier = "shm";
  r.model = find_preset("1b");
  const Json c = deepspeed_plan(r).config;
  EXPECT_EQ(c.at("zero_optimization").at("offload_optimizer").at("device"), "cpu");
  EXPECT_FALSE(c.at("zero_optimization").at("offload_optimizer").contains("nvme_path"));
  EXPECT_FALSE(c.contains("aio"));
}

TEST(DeepSpeedConfig, ParamOffloadAddsOffloadParamOnCpu) {
  Plan p = mlpo::testing::plan_for("1b", 1, 1, 1,
                                   {mlpo::testing::plan_tier(example_request().profile, "nvme", 1)});
  EXPECT_FALSE(deepspeed_config(p, false).at("zero_optimization").contains("offload_param"));  // one GPU
  const Json c = deepspeed_config(p, true);
  EXPECT_EQ(c.at("zero_optimization").at("offload_param"), (Json{{"device", "cpu"}, {"pin_memory", true}}));
}

TEST(DeepSpeedConfig, RefusesWhatDeepSpeedCannotRun) {
  TuneRequest no_gpu = example_request();
  no_gpu.profile.gpus.clear();
  no_gpu.profile.gpus_reason = "no NVIDIA driver";
  EXPECT_THROW(
      {
        try {
          deepspeed_plan(no_gpu);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("has no GPU"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  TuneRequest update_only = example_request();
  update_only.options.update_only = true;
  EXPECT_THROW(deepspeed_plan(update_only), Error);
  TuneRequest too_big = example_request();
  for (TierProfile& t : too_big.profile.tiers) t.free_bytes = t.capacity_bytes = std::int64_t{1} << 30;
  too_big.profile.host.available_bytes = std::int64_t{600} << 30;
  EXPECT_THROW(deepspeed_plan(too_big), Error);
}

}  // namespace
}  // namespace mlpo::tune
