// Profile and plan formats: round trips, and malformed inputs that must give an Error
// naming the field (never a crash, never an uncaught library exception).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo {

namespace {

Json measured(double v) {
  return Json{{"median", v}, {"min", v * 0.9}, {"max", v * 1.1}, {"repetitions", 3}, {"size_bytes", 1 << 30}};
}

Json sample_profile() {
  return Json{
      {"schema", "mlpo.profile/1"},
      {"hostname", "dev"},
      {"measured_at", "2026-11-29T00:00:00Z"},
      {"host",
       {{"cores", 2},
        {"memory_bytes", 24LL << 30},
        {"available_bytes", 20LL << 30},
        {"numa_nodes", 1},
        {"memcpy_gbps_single", measured(8)},
        {"memcpy_gbps", measured(10)},
        {"adam_elements_per_s", Json::array({{{"threads", 1}, {"value", measured(2e8)}},
                                             {{"threads", 2}, {"value", measured(3.5e8)}}})}}},
      {"gpus", Json::array()},
      {"gpus_reason", "no CUDA device"},
      {"tiers", Json::array({{{"name", "nvme"},
                              {"kind", "nvme"},
                              {"path", "/tmp/mlpo"},
                              {"capacity_bytes", 100LL << 30},
                              {"free_bytes", 50LL << 30},
                              {"read_gbps", Json::array({{{"streams", 1}, {"value", measured(1.5)}},
                                                         {{"streams", 2}, {"value", measured(1.8)}}})},
                              {"write_gbps", Json::array({{{"streams", 1}, {"value", 1.0}}})}},
                             {{"name", "shm"},
                              {"kind", "host"},
                              {"path", "/dev/shm/mlpo"},
                              {"capacity_bytes", 12LL << 30},
                              {"free_bytes", 12LL << 30},
                              {"direct_io", false},
                              {"read_gbps", Json::array({{{"streams", 1}, {"value", 6.0}}})},
                              {"write_gbps", Json::array({{{"streams", 1}, {"value", 4.0}}})}}})}};
}

Json sample_plan() {
  return Json{
      {"schema", "mlpo.plan/1"},
      {"model", {{"name", "tiny"}, {"params", 853120}}},
      {"cluster", {{"nodes", 1}, {"gpus_per_node", 1}, {"micro_batch", 2}}},
      {"mode", "mlp"},
      {"subgroup_elements", 65536},
      {"tiers",
       Json::array({{{"name", "nvme"},
                     {"kind", "nvme"},
                     {"path", "/tmp/x"},
                     {"fraction", 0.75},
                     {"concurrency_limit", 1}},
                    {{"name", "shm"}, {"kind", "host"}, {"path", "/dev/shm/x"}, {"fraction", 0.25}}})},
      {"host_cache_subgroups", 2},
      {"buffers", 4},
      {"prefetch_depth", 2},
      {"io", {{"block_size", 1 << 20}, {"queue_depth", 8}}},
      {"order", "alternating"},
      {"gradients", "delayed"}};
}

using testing::error_of;

}  // namespace

TEST(ProfileFormat, RoundTripsThroughJson) {
  Profile p = profile_from_json(sample_profile());
  Json once = to_json(p);
  EXPECT_EQ(to_json(profile_from_json(once)), once);
  EXPECT_EQ(p.tiers.size(), 2u);
  EXPECT_DOUBLE_EQ(p.tiers[0].read_at(1.5), 1.65);
  EXPECT_DOUBLE_EQ(p.tiers[0].read_at(8), 1.8);   // clamped past the last point
  EXPECT_DOUBLE_EQ(p.tiers[1].write_at(1), 4.0);  // plain number = given value
}

TEST(ProfileFormat, GpuGemmShapesAndAllGpuAggregatesRoundTrip) {
  Json j = sample_profile();
  j["host"]["bf16_to_fp32_gbps"] = measured(6);
  j["gpus"] = Json::array(
      {{{"model", "NVIDIA H200"},
        {"count", 2},
        {"memory_bytes", 140LL << 30},
        {"sm_count", 132},
        {"bf16_tflops", measured(700)},
        {"hbm_gbps", measured(4000)},
        {"h2d_gbps", measured(50)},
        {"d2h_gbps", measured(50)},
        {"bidirectional_gbps", measured(90)},
        {"gemm",
         Json::array({{{"name", "qkv"}, {"m", 4096}, {"n", 12288}, {"k", 4096}, {"tflops", measured(650)}}})},
        {"all_bf16_tflops", measured(1400)},
        {"all_h2d_gbps", measured(95)},
        {"all_d2h_gbps", measured(96)}}});
  const Profile p = profile_from_json(j);
  ASSERT_EQ(p.gpus.size(), 1u);
  ASSERT_EQ(p.gpus[0].gemm.size(), 1u);
  EXPECT_EQ(p.gpus[0].gemm[0].n, 12288);
  EXPECT_DOUBLE_EQ(p.gpus[0].all_h2d_gbps.median, 95);
  EXPECT_DOUBLE_EQ(p.host.bf16_to_fp32_gbps.median, 6);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
}

TEST(ProfileFormat, MixedReadWriteCurvesRoundTripAndAreOptional) {
  Json j = sample_profile();
  j["tiers"][0]["mixed_read_gbps"] =
      Json::array({{{"streams", 1}, {"value", measured(1.2)}}, {{"streams", 2}, {"value", measured(1.4)}}});
  j["tiers"][0]["mixed_write_gbps"] =
      Json::array({{{"streams", 1}, {"value", measured(0.9)}}, {{"streams", 2}, {"value", 1.0}}});
  const Profile p = profile_from_json(j);
  ASSERT_TRUE(p.tiers[0].has_mixed());
  EXPECT_DOUBLE_EQ(interpolate(p.tiers[0].mixed_read_gbps, 1.5), 1.3);
  EXPECT_DOUBLE_EQ(interpolate(p.tiers[0].mixed_write_gbps, 2), 1.0);
  EXPECT_FALSE(p.tiers[1].has_mixed());  // a profile made before the mixed probe still loads
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  EXPECT_FALSE(to_json(p)["tiers"][1].contains("mixed_read_gbps"));
}

TEST(ProfileFormat, MoreIoSettingsRoundTripAndEachCarriesItsOwnCurves) {
  Json j = sample_profile();
  j["tiers"][0]["io_settings"] =
      Json::array({{{"block_size", 4 << 20},
                    {"queue_depth", 4},
                    {"read_gbps", Json::array({{{"streams", 1}, {"value", measured(3.0)}}})},
                    {"write_gbps", Json::array({{{"streams", 1}, {"value", measured(2.5)}}})},
                    {"mixed_read_gbps", Json::array({{{"streams", 1}, {"value", measured(1.5)}}})},
                    {"mixed_write_gbps", Json::array({{{"streams", 1}, {"value", measured(1.25)}}})}}});
  const Profile p = profile_from_json(j);
  ASSERT_EQ(p.tiers[0].io_settings.size(), 1u);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  EXPECT_FALSE(to_json(p)["tiers"][1].contains("io_settings"));  // optional

  // The tier at a setting: its curves, everything else the tier's.
  const auto at = p.tiers[0].at_io_setting({4 << 20, 4});
  ASSERT_TRUE(at.has_value());
  EXPECT_DOUBLE_EQ(at->read_at(1), 3.0);
  EXPECT_DOUBLE_EQ(interpolate(at->mixed_write_gbps, 1), 1.25);
  EXPECT_EQ(at->block_size, 4 << 20);
  EXPECT_EQ(at->queue_depth, 4);
  EXPECT_EQ(at->name, p.tiers[0].name);
  const auto main = p.tiers[0].at_io_setting(p.tiers[0].io_setting());
  ASSERT_TRUE(main.has_value());
  EXPECT_DOUBLE_EQ(main->read_at(1), p.tiers[0].read_at(1));
  EXPECT_FALSE(p.tiers[0].at_io_setting({256 << 10, 32}).has_value());
  const auto settings = p.tiers[0].measured_io_settings();
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_TRUE(settings[0] == p.tiers[0].io_setting());
  EXPECT_TRUE((settings[1] == IoSetting{std::int64_t{4} << 20, 4}));

  // The main setting again, or a block size off the 4 KiB grid, is an error naming the field.
  Json twice = j;
  twice["tiers"][0]["io_settings"][0]["block_size"] = 1 << 20;
  twice["tiers"][0]["io_settings"][0]["queue_depth"] = 8;
  EXPECT_NE(error_of([&] { profile_from_json(twice); }).find("tiers[0].io_settings[0].block_size"),
            std::string::npos);
  Json odd = j;
  odd["tiers"][0]["io_settings"][0]["block_size"] = 5000;
  EXPECT_NE(error_of([&] { profile_from_json(odd); }).find("multiple of 4096"), std::string::npos);
}

TEST(ProfileFormat, CollectiveRatesRoundTripAndAreOptional) {
  Json j = sample_profile();
  EXPECT_FALSE(to_json(profile_from_json(j)).contains("comm"));  // absent stays absent
  j["comm"] = {{"host_mpi",
                {{"ranks", 2},
                 {"all_gather_gbps", measured(3.5)},
                 {"reduce_scatter_gbps", measured(1.25)},
                 {"latency_us", measured(40)}}},
               {"inter_node", {{"all_gather_gbps", 12.5}, {"reduce_scatter_gbps", 11}}}};
  const Profile p = profile_from_json(j);
  ASSERT_TRUE(p.comm.host_mpi.measured);
  EXPECT_EQ(p.comm.host_mpi.ranks, 2);
  EXPECT_DOUBLE_EQ(p.comm.host_mpi.all_gather_gbps.median, 3.5);
  EXPECT_DOUBLE_EQ(p.comm.host_mpi.reduce_scatter_gbps.median, 1.25);
  EXPECT_DOUBLE_EQ(p.comm.host_mpi.latency_us.median, 40);
  EXPECT_FALSE(p.comm.nccl.measured);
  ASSERT_TRUE(p.comm.inter_node.measured);
  EXPECT_DOUBLE_EQ(p.comm.inter_node.all_gather_gbps.median, 12.5);
  EXPECT_DOUBLE_EQ(p.comm.inter_node.latency_us.median, 0);  // latency optional
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  EXPECT_FALSE(to_json(p)["comm"].contains("nccl"));
  j["comm"]["host_mpi"]["all_gather_gbps"] = 0;
  EXPECT_NE(error_of([&] { profile_from_json(j); }).find("comm.host_mpi.all_gather_gbps"), std::string::npos);
}

TEST(ProfileFormat, CpuModelFiguresRoundTripAndAreOptional) {
  Json j = sample_profile();
  EXPECT_FALSE(profile_from_json(j).host.cpu_model.measured());  // a profile made before the probe
  EXPECT_FALSE(to_json(profile_from_json(j))["host"].contains("cpu_model"));
  j["host"]["cpu_model"] = {{"model", "small"},
                            {"micro_batch", 2},
                            {"seq_len", 256},
                            {"threads", 2},
                            {"layer_forward_gflops", measured(31)},
                            {"layer_backward_gflops", measured(24)},
                            {"head_forward_gflops", measured(40)},
                            {"head_backward_gflops", 35.5}};
  const Profile p = profile_from_json(j);
  ASSERT_TRUE(p.host.cpu_model.measured());
  EXPECT_EQ(p.host.cpu_model.model, "small");
  EXPECT_EQ(p.host.cpu_model.seq_len, 256);
  EXPECT_DOUBLE_EQ(p.host.cpu_model.layer_backward_gflops.median, 24);
  EXPECT_DOUBLE_EQ(p.host.cpu_model.head_backward_gflops.median, 35.5);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  EXPECT_FALSE(p.host.cpu_model_one_thread.measured());  // optional beside it
  j["host"]["cpu_model_one_thread"] = j["host"]["cpu_model"];
  j["host"]["cpu_model_one_thread"]["threads"] = 1;
  const Profile q = profile_from_json(j);
  EXPECT_EQ(q.host.cpu_model_one_thread.threads, 1);
  EXPECT_DOUBLE_EQ(q.host.cpu_model_one_thread.layer_forward_gflops.median, 31);
  EXPECT_EQ(to_json(profile_from_json(to_json(q))), to_json(q));
  j["host"]["cpu_model"]["head_forward_gflops"] = 0;
  EXPECT_NE(error_of([&] { profile_from_json(j); }).find("host.cpu_model.head_forward_gflops"),
            std::string::npos);
}

// An optional host figure in seconds: absent from older profiles (0, and not written back),
// read and round-tripped when present.
void expect_optional_seconds_figure(const char* field, Measurement HostProfile::*figure, double seconds) {
  Json j = sample_profile();
  EXPECT_EQ((profile_from_json(j).host.*figure).median, 0) << field;
  EXPECT_FALSE(to_json(profile_from_json(j))["host"].contains(field)) << field;
  j["host"][field] = {{"median", seconds},
                      {"min", 0.9 * seconds},
                      {"max", 2 * seconds},
                      {"repetitions", 3},
                      {"size_bytes", 0}};
  const Profile p = profile_from_json(j);
  EXPECT_DOUBLE_EQ((p.host.*figure).median, seconds) << field;
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p)) << field;
}

TEST(ProfileFormat, PoolDispatchFigureRoundTripsAndIsOptional) {
  expect_optional_seconds_figure("pool_dispatch_s", &HostProfile::pool_dispatch_s, 2e-5);
}

TEST(ProfileFormat, ThreadStartFigureRoundTripsAndIsOptional) {
  expect_optional_seconds_figure("thread_start_s", &HostProfile::thread_start_s, 5.6e-5);
}

TEST(ProfileFormat, CpuStealShareRoundTripsIsOptionalAndIsAShare) {
  // The hypervisor's share of the CPU while the host was measured: 0 is a figure (none
  // stolen), absence is none (older profiles, no /proc/stat).
  Json j = sample_profile();
  EXPECT_FALSE(profile_from_json(j).host.cpu_steal.has_value());
  EXPECT_FALSE(to_json(profile_from_json(j))["host"].contains("cpu_steal"));
  for (double share : {0.0, 0.125}) {
    j["host"]["cpu_steal"] = share;
    const Profile p = profile_from_json(j);
    ASSERT_TRUE(p.host.cpu_steal.has_value());
    EXPECT_DOUBLE_EQ(*p.host.cpu_steal, share);
    EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  }
  j["host"]["cpu_steal"] = 12.5;  // a percentage is not a share
  EXPECT_NE(error_of([&] { profile_from_json(j); }).find("host.cpu_steal"), std::string::npos);
}

TEST(ProfileFormat, GradientNormFigureRoundTripsAndIsOptional) {
  Json j = sample_profile();
  EXPECT_EQ(profile_from_json(j).host.grad_norm_elements_per_s.median, 0);  // older profiles lack it
  EXPECT_FALSE(to_json(profile_from_json(j))["host"].contains("grad_norm_elements_per_s"));
  j["host"]["grad_norm_elements_per_s"] = {
      {"median", 2e9}, {"min", 1.9e9}, {"max", 2.1e9}, {"repetitions", 3}, {"size_bytes", 1 << 20}};
  const Profile p = profile_from_json(j);
  EXPECT_DOUBLE_EQ(p.host.grad_norm_elements_per_s.median, 2e9);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
}

TEST(ProfileFormat, CheckedAdamCurveRoundTripsAndIsOptional) {
  Json j = sample_profile();
  EXPECT_TRUE(profile_from_json(j).host.adam_checked_elements_per_s.empty());  // older profiles lack it
  EXPECT_FALSE(to_json(profile_from_json(j))["host"].contains("adam_checked_elements_per_s"));
  j["host"]["adam_checked_elements_per_s"] = Json::array(
      {{{"threads", 1},
        {"value",
         {{"median", 1e8}, {"min", 1e8}, {"max", 1e8}, {"repetitions", 3}, {"size_bytes", 1 << 20}}}}});
  const Profile p = profile_from_json(j);
  ASSERT_EQ(p.host.adam_checked_elements_per_s.size(), 1u);
  EXPECT_DOUBLE_EQ(p.host.adam_checked_elements_per_s[0].value.median, 1e8);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
}

TEST(ProfileFormat, UpdateInterferenceRoundTripsAndIsOptional) {
  Json j = sample_profile();
  EXPECT_EQ(profile_from_json(j).tiers[0].io_ratio_adam_busy, 0);  // a profile made before the probe
  EXPECT_FALSE(to_json(profile_from_json(j))["tiers"][0].contains("update_interference"));
  j["tiers"][0]["update_interference"] = {{"io_ratio", 0.85}, {"adam_ratio", 0.6}};
  const Profile p = profile_from_json(j);
  EXPECT_DOUBLE_EQ(p.tiers[0].io_ratio_adam_busy, 0.85);
  EXPECT_DOUBLE_EQ(p.tiers[0].adam_ratio_io_busy, 0.6);
  EXPECT_EQ(p.tiers[0].slot_handoff_us, 0);  // measured later than the ratios: optional
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));
  j["tiers"][0]["update_interference"]["slot_handoff_us"] = 250;
  j["tiers"][0]["update_interference"]["slot_handoff_waits_adam"] = 0.75;
  const Profile q = profile_from_json(j);
  EXPECT_DOUBLE_EQ(q.tiers[0].slot_handoff_us, 250);
  EXPECT_DOUBLE_EQ(q.tiers[0].slot_handoff_waits_adam, 0.75);
  EXPECT_EQ(to_json(profile_from_json(to_json(q))), to_json(q));
  j["tiers"][0]["update_interference"]["slot_handoff_waits_adam"] = 1.5;
  EXPECT_NE(error_of([&] { profile_from_json(j); }).find("update_interference.slot_handoff_waits_adam"),
            std::string::npos);
  j["tiers"][0]["update_interference"]["slot_handoff_waits_adam"] = 0.75;
  j["tiers"][0]["update_interference"]["adam_ratio"] = 0;
  EXPECT_NE(error_of([&] { profile_from_json(j); }).find("update_interference.adam_ratio"),
            std::string::npos);
}

TEST(PlanFormat, RoundTripsThroughJson) {
  Plan p = plan_from_json(sample_plan());
  Json once = to_json(p);
  EXPECT_EQ(to_json(plan_from_json(once)), once);
  EXPECT_EQ(p.order, OrderPolicy::alternating);
  EXPECT_EQ(p.tiers[0].concurrency_limit, 1);
  EXPECT_EQ(p.tiers[1].concurrency_limit, 0);
}

TEST(PlanFormat, BaselineStreamsFromTheFirstStreamedTier) {
  Plan p;
  p.model_name = "m";
  p.model_params = 1;
  p.tiers = {PlanTier{"ram", "", TierKind::memory, 0.2, 0},
             PlanTier{"shm", "/dev/shm/x", TierKind::host, 0.3, 0},
             PlanTier{"disk", "/var/tmp/x", TierKind::nvme, 0.5, 2}};
  validate(p);
  Plan b = baseline_of(p);
  ASSERT_EQ(b.tiers.size(), 1u);
  EXPECT_EQ(b.tiers[0].name, "disk");  // not the mapped host tier: ZeRO-3 offload does storage I/O
  EXPECT_EQ(b.tiers[0].concurrency_limit, 0);
  p.tiers.pop_back();
  p.tiers[1].fraction = 0.8;
  EXPECT_EQ(baseline_of(p).tiers[0].name, "shm");  // no streamed tier: the first file tier
}

TEST(PlanFormat, PredictionRoundTrips) {
  Json j = sample_plan();
  j["prediction"] =
      Json{{"iteration_s", 3.5},
           {"update_s", 2.0},
           {"adam_s", 0.7},
           {"model", "simgrid"},
           {"tiers",
            Json::array({{{"name", "nvme"}, {"read_bytes", 1e9}, {"write_bytes", 1e9}, {"busy_s", 1.2}}})}};
  Plan p = plan_from_json(j);
  ASSERT_TRUE(p.prediction.has_value());
  EXPECT_DOUBLE_EQ(p.prediction->tiers[0].busy_s, 1.2);
  EXPECT_DOUBLE_EQ(p.prediction->adam_s, 0.7);
  EXPECT_EQ(to_json(plan_from_json(to_json(p))), to_json(p));
}

struct Malformed {
  const char* name;
  std::function<void(Json&)> mutate;
  const char* expect;  // substring of the error
};

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class MalformedProfile : public ::testing::TestWithParam<Malformed> {};
class MalformedPlan : public ::testing::TestWithParam<Malformed> {};

// `parse` (of a `kind` mutated by case `m`) must refuse it with a message containing m.expect.
void expect_field_error(const Malformed& m, const std::string& kind, const std::function<void()>& parse) {
  const std::string msg = error_of(parse);
  ASSERT_FALSE(msg.empty()) << "accepted malformed " << kind << ": " << m.name;
  EXPECT_NE(msg.find(m.expect), std::string::npos) << "message was: " << msg;
}

TEST_P(MalformedProfile, GivesNamedFieldError) {
  Json j = sample_profile();
  GetParam().mutate(j);
  expect_field_error(GetParam(), "profile", [&] { profile_from_json(j); });
}

TEST_P(MalformedPlan, GivesNamedFieldError) {
  Json j = sample_plan();
  GetParam().mutate(j);
  expect_field_error(GetParam(), "plan", [&] { plan_from_json(j); });
}

auto name_of = [](const auto& info) { return std::string(info.param.name); };

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedProfile,
    ::testing::Values(
        Malformed{"NotAnObject", [](Json& j) { j = Json::array(); }, "must be an object"},
        Malformed{"WrongSchema", [](Json& j) { j["schema"] = "mlpo.plan/1"; },
                  "schema: expected \"mlpo.profile/1\""},
        Malformed{"MissingSchema", [](Json& j) { j.erase("schema"); }, "schema: missing"},
        Malformed{"CoresWrongType", [](Json& j) { j["host"]["cores"] = "two"; },
                  "host.cores: must be an integer"},
        Malformed{"CoresFractional", [](Json& j) { j["host"]["cores"] = 1.5; },
                  "host.cores: must be an integer"},
        Malformed{"NegativeMemory", [](Json& j) { j["host"]["memory_bytes"] = -5; },
                  "host.memory_bytes: must be between"},
        Malformed{"HugeMemory", [](Json& j) { j["host"]["memory_bytes"] = 1e300; }, "host.memory_bytes"},
        Malformed{"HugeUnsigned", [](Json& j) { j["tiers"][0]["free_bytes"] = 18446744073709551615ull; },
                  "tiers[0].free_bytes: is too large"},
        Malformed{"ZeroReadBandwidth", [](Json& j) { j["tiers"][1]["read_gbps"][0]["value"] = 0; },
                  "tiers[1].read_gbps[0].value: must be > 0"},
        Malformed{"NegativeWriteMedian",
                  [](Json& j) {
                    j["tiers"][0]["write_gbps"][0]["value"] = Json{{"median", -1}};
                  },
                  "tiers[0].write_gbps[0].value.median"},
        Malformed{"EmptyCurve", [](Json& j) { j["tiers"][0]["read_gbps"] = Json::array(); },
                  "tiers[0].read_gbps: must have at least one point"},
        Malformed{"UnsortedCurve", [](Json& j) { j["tiers"][0]["read_gbps"][1]["streams"] = 1; },
                  "tiers[0].read_gbps[1].streams: points must be in increasing order"},
        Malformed{"MixedReadWithoutWrite",
                  [](Json& j) { j["tiers"][0]["mixed_read_gbps"] = j["tiers"][0]["read_gbps"]; },
                  "tiers[0].mixed_write_gbps: missing (mixed_read_gbps and mixed_write_gbps come together"},
        Malformed{"MixedCurvesWithDifferentPoints",
                  [](Json& j) {
                    j["tiers"][0]["mixed_read_gbps"] = j["tiers"][0]["read_gbps"];
                    j["tiers"][0]["mixed_write_gbps"] = j["tiers"][0]["write_gbps"];
                  },
                  "tiers[0].mixed_write_gbps: must have the same streams points as mixed_read_gbps"},
        Malformed{"ZeroMixedWrite",
                  [](Json& j) {
                    j["tiers"][1]["mixed_read_gbps"] = j["tiers"][1]["read_gbps"];
                    j["tiers"][1]["mixed_write_gbps"] = Json::array({{{"streams", 1}, {"value", 0}}});
                  },
                  "tiers[1].mixed_write_gbps[0].value: must be > 0"},
        Malformed{"DuplicateTierName", [](Json& j) { j["tiers"][1]["name"] = "nvme"; },
                  "tiers[1].name: duplicate tier name 'nvme'"},
        Malformed{"UnknownTierKind", [](Json& j) { j["tiers"][0]["kind"] = "tape"; },
                  "tiers[0].kind: 'tape' is not a tier kind"},
        Malformed{"MissingPath", [](Json& j) { j["tiers"][0].erase("path"); }, "tiers[0].path: missing"},
        Malformed{"FreeOverCapacity", [](Json& j) { j["tiers"][0]["free_bytes"] = 200LL << 30; },
                  "tiers[0].free_bytes: must not exceed capacity_bytes"},
        Malformed{"UnalignedBlock", [](Json& j) { j["tiers"][0]["block_size"] = 1000; },
                  "tiers[0].block_size"},
        Malformed{"UnknownField", [](Json& j) { j["host"]["corez"] = 2; }, "host.corez: unknown field"},
        Malformed{"SpreadInverted",
                  [](Json& j) {
                    j["host"]["memcpy_gbps"] = Json{{"median", 5}, {"min", 6}, {"max", 7}};
                  },
                  "host.memcpy_gbps.median: must lie between min and max"},
        Malformed{"GpusNotArray", [](Json& j) { j["gpus"] = "none"; }, "gpus: must be an array"},
        Malformed{"GpuMissingModel", [](Json& j) { j["gpus"] = Json::array({Json::object()}); },
                  "gpus[0].model: missing"},
        Malformed{"NaNLikeString", [](Json& j) { j["host"]["memcpy_gbps"] = "NaN"; },
                  "host.memcpy_gbps: must be an object"}),
    name_of);

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedPlan,
    ::testing::Values(Malformed{"WrongSchema", [](Json& j) { j["schema"] = "mlpo.profile/1"; },
                                "this is an mlpo.profile/1 file"},
                      Malformed{"FractionsDontSumToOne", [](Json& j) { j["tiers"][1]["fraction"] = 0.15; },
                                "tiers: fractions sum to 0.9, they must sum to 1"},
                      Malformed{"FractionOverOne", [](Json& j) { j["tiers"][0]["fraction"] = 1.5; },
                                "tiers[0].fraction: must be between 0 and 1"},
                      Malformed{"NegativeLimit", [](Json& j) { j["tiers"][0]["concurrency_limit"] = -1; },
                                "tiers[0].concurrency_limit"},
                      Malformed{"DuplicateTier", [](Json& j) { j["tiers"][1]["name"] = "nvme"; },
                                "tiers[1].name: duplicate tier name"},
                      Malformed{"NoTiers", [](Json& j) { j["tiers"] = Json::array(); },
                                "tiers: a plan needs at least one tier"},
                      Malformed{"SubgroupNotMultiple", [](Json& j) { j["subgroup_elements"] = 1000; },
                                "subgroup_elements: must be a positive multiple of 1024"},
                      Malformed{"NegativeSubgroup", [](Json& j) { j["subgroup_elements"] = -4096; },
                                "subgroup_elements: must be between"},
                      Malformed{"UnknownOrder", [](Json& j) { j["order"] = "random"; },
                                "order: 'random' is not one of: ascending, alternating"},
                      Malformed{"UnknownGradientPolicy", [](Json& j) { j["gradients"] = "fp16"; },
                                "gradients: 'fp16' is not one of"},
                      Malformed{"BaselineWithTwoTiers", [](Json& j) { j["mode"] = "baseline"; },
                                "mode: baseline requires exactly one tier"},
                      Malformed{"PrefetchOverBuffers", [](Json& j) { j["prefetch_depth"] = 9; },
                                "prefetch_depth: must be between 1 and buffers"},
                      Malformed{"MissingModel", [](Json& j) { j.erase("model"); }, "model: missing"},
                      Malformed{"ModelParamsString", [](Json& j) { j["model"]["params"] = "1B"; },
                                "model.params: must be an integer"},
                      Malformed{"UnknownIoField", [](Json& j) { j["io"]["blocksize"] = 4096; },
                                "io.blocksize: unknown field"},
                      Malformed{"BoolAsString", [](Json& j) { j["io"]["direct_io"] = "yes"; },
                                "io.direct_io: must be true or false"}),
    name_of);

class FileErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mlpo-formats-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(FileErrors, EmptyFileSaysEmpty) {
  std::string msg = error_of([&] { load_profile(write("empty.json", "")); });
  EXPECT_NE(msg.find("empty.json: file is empty"), std::string::npos) << msg;
}

TEST_F(FileErrors, NotJsonSaysWhereParsingFailed) {
  std::string msg = error_of([&] { load_plan(write("bad.json", "{\"schema\": mlpo}")); });
  EXPECT_NE(msg.find("bad.json: not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 1"), std::string::npos) << msg;
}

TEST_F(FileErrors, MissingFileNamesPath) {
  std::string msg = error_of([&] { load_profile((dir_ / "nope.json").string()); });
  EXPECT_NE(msg.find("nope.json: cannot open (No such file or directory)"), std::string::npos) << msg;
}

TEST_F(FileErrors, FieldErrorIsPrefixedByFile) {
  Json j = sample_plan();
  j["order"] = 3;
  std::string msg = error_of([&] { load_plan(write("p.json", j.dump())); });
  EXPECT_NE(msg.find("p.json: order: must be a string"), std::string::npos) << msg;
}

TEST_F(FileErrors, SavePlanIsAtomicAndLoadable) {
  Plan p = plan_from_json(sample_plan());
  std::string path = (dir_ / "plan.json").string();
  save_plan(p, path);
  EXPECT_EQ(to_json(load_plan(path)), to_json(p));
  int files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1) << "temp file left behind";
}

}  // namespace mlpo
