// What-if edits: every kind parses, changes exactly the figures it names, and a bad edit is an
// error that names it and what would be accepted.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/internal/scenario_edit.hpp"

namespace mlpo::tune {
namespace {

using mlpo::testing::io_bound_profile;
using mlpo::testing::point;

Scenario sample() {
  Scenario s{io_bound_profile(), ClusterShape{1, 2, 1, 0, 1}, 0};
  TierProfile& nvme = s.profile.tiers[1];
  nvme.read_gbps = {point(1, 1.0), point(4, 2.0)};
  nvme.mixed_read_gbps = {point(1, 0.8)};
  nvme.mixed_write_gbps = {point(1, 0.7)};
  nvme.io_settings.push_back(TierIoSetting{4 << 20, 16, {point(1, 2.5)}, {point(1, 2.2)}, {}, {}});
  return s;
}

Scenario edited(const std::string& edit, Scenario s = sample()) {
  apply(parse_edit(edit), s);
  return s;
}

std::string error_of(const std::string& edit, Scenario s = sample()) {
  try {
    apply(parse_edit(edit), s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioEdit, ScalingAReadRateScalesEveryReadCurveOfTheTierAndNoWriteCurve) {
  const Scenario s = edited("tier.nvme.read_gbps*2");
  const TierProfile& t = s.profile.tiers[1];
  EXPECT_DOUBLE_EQ(t.read_gbps[0].value.median, 2.0);
  EXPECT_DOUBLE_EQ(t.read_gbps[1].value.median, 4.0);
  EXPECT_DOUBLE_EQ(t.mixed_read_gbps[0].value.median, 1.6);
  EXPECT_DOUBLE_EQ(t.io_settings[0].read_gbps[0].value.median, 5.0);
  EXPECT_DOUBLE_EQ(t.write_gbps[0].value.median, 2.0);  // unchanged
  EXPECT_DOUBLE_EQ(t.mixed_write_gbps[0].value.median, 0.7);
  EXPECT_DOUBLE_EQ(t.io_settings[0].write_gbps[0].value.median, 2.2);
  EXPECT_DOUBLE_EQ(s.profile.tiers[2].read_gbps[0].value.median, 1.0);  // another tier: unchanged
}

TEST(ScenarioEdit, SettingARateSetsItsCurvesPeakAndKeepsItsShape) {
  const TierProfile t = edited("tier.nvme.read_gbps=8").profile.tiers[1];
  EXPECT_DOUBLE_EQ(t.read_gbps[1].value.median, 8.0);
  EXPECT_DOUBLE_EQ(t.read_gbps[0].value.median, 4.0);
  const TierProfile both = edited("tier.nvme.gbps*0.5").profile.tiers[1];
  EXPECT_DOUBLE_EQ(both.read_gbps[1].value.median, 1.0);
  EXPECT_DOUBLE_EQ(both.write_gbps[0].value.median, 1.0);
}

TEST(ScenarioEdit, SizesNeedAUnitAndKeepWhatIsUsed) {
  Scenario s = sample();
  s.profile.tiers[1].capacity_bytes = std::int64_t{100} << 30;
  s.profile.tiers[1].free_bytes = std::int64_t{60} << 30;
  const TierProfile t = edited("tier.nvme.capacity=200GiB", s).profile.tiers[1];
  EXPECT_EQ(t.capacity_bytes, std::int64_t{200} << 30);
  EXPECT_EQ(t.free_bytes, std::int64_t{160} << 30);  // 40 GiB stay used
  EXPECT_NE(error_of("tier.nvme.capacity=200").find("with a unit"), std::string::npos);
  const Scenario m = edited("host.memory=512GiB");
  EXPECT_EQ(m.profile.host.memory_bytes, std::int64_t{512} << 30);
  EXPECT_EQ(m.profile.host.available_bytes, std::int64_t{512} << 30);  // moved with it
  EXPECT_NE(error_of("host.available=1TiB").find("raise host.memory first"), std::string::npos);
}

TEST(ScenarioEdit, HostFiguresScaleWhatTheModelsRead) {
  const Scenario s = edited("host.adam*2");
  EXPECT_DOUBLE_EQ(s.profile.host.adam_elements_per_s[1].value.median, 2e10);
  const Scenario c = edited("host.compute*3", Scenario{mlpo::testing::cpu_model_profile(20), {}, 0});
  EXPECT_DOUBLE_EQ(c.profile.host.cpu_model.layer_backward_gflops.median, 60);
  EXPECT_DOUBLE_EQ(edited("host.memcpy_gbps=20").profile.host.memcpy_gbps_single.median, 10);
}

TEST(ScenarioEdit, GpuEditsNeedAGpuAndChangeEveryGpu) {
  EXPECT_NE(error_of("gpu.tflops*2").find("has no GPU"), std::string::npos);
  Scenario s = sample();
  s.profile.gpus = {mlpo::testing::gpu(4)};
  const Scenario g = edited("gpu.pcie_gbps=50", s);
  EXPECT_DOUBLE_EQ(g.profile.gpus[0].h2d_gbps.median, 50);
  EXPECT_DOUBLE_EQ(g.profile.gpus[0].bidirectional_gbps.median, 80);
  EXPECT_DOUBLE_EQ(edited("gpu.tflops*0.5", s).profile.gpus[0].bf16_tflops.median, 200);
  EXPECT_EQ(edited("gpu.memory=40GiB", s).profile.gpus[0].memory_bytes, std::int64_t{40} << 30);
}

TEST(ScenarioEdit, SettingAnAbsentCommPathAddsItAndScalingItIsAnError) {
  const Scenario s = edited("comm.inter_node.gbps=25");
  EXPECT_TRUE(s.profile.comm.inter_node.measured);
  EXPECT_DOUBLE_EQ(s.profile.comm.inter_node.reduce_scatter_gbps.median, 25);
  EXPECT_NE(error_of("comm.inter_node.gbps*2").find("comm.inter_node.gbps=VALUE"), std::string::npos);
  EXPECT_NE(error_of("comm.ethernet.gbps=1").find("host_mpi, nccl, inter_node"), std::string::npos);
}

TEST(ScenarioEdit, ShapeAndBackboneEdits) {
  EXPECT_EQ(edited("nodes=16").shape.nodes, 16);
  EXPECT_EQ(edited("gpus_per_node*4").shape.ranks_per_node, 8);
  EXPECT_NE(error_of("nodes=1.5").find("whole number"), std::string::npos);
  EXPECT_NE(error_of("seq_len*2").find("seq_len=N"), std::string::npos);
  EXPECT_DOUBLE_EQ(edited("remote_backbone_gbps=3").remote_backbone_gbps, 3);
}

TEST(ScenarioEdit, TiersAreAddedLikeAnotherAndRemoved) {
  const Scenario s = edited("tier+=nvme2:like=nvme");
  ASSERT_EQ(s.profile.tiers.size(), 4u);
  EXPECT_EQ(s.profile.tiers[3].name, "nvme2");
  EXPECT_EQ(s.profile.tiers[3].path, "/tmp/nvme/nvme2");
  EXPECT_EQ(s.profile.tiers[3].kind, TierKind::nvme);
  EXPECT_EQ(edited("tier+=n3:like=nvme,path=/mnt/n3").profile.tiers[3].path, "/mnt/n3");
  EXPECT_EQ(edited("tier-=pfs").profile.tiers.size(), 2u);
  EXPECT_NE(error_of("tier+=nvme:like=pfs").find("already has"), std::string::npos);
  Scenario one = sample();
  one.profile.tiers.resize(1);
  EXPECT_NE(error_of("tier-=shm", one).find("only tier"), std::string::npos);
}

TEST(ScenarioEdit, BadEditsNameTheEditAndWhatIsAccepted) {
  EXPECT_NE(error_of("tier.nvme.speed*2").find("read_gbps, write_gbps"), std::string::npos);
  EXPECT_NE(error_of("tier.ssd.read_gbps*2").find("its tiers are shm, nvme, pfs"), std::string::npos);
  EXPECT_NE(error_of("cores=4").find("unknown target"), std::string::npos);
  EXPECT_NE(error_of("nvme faster").find("TARGET=VALUE or TARGET*FACTOR"), std::string::npos);
  EXPECT_NE(error_of("tier.nvme.read_gbps*0").find("factor must be > 0"), std::string::npos);
  EXPECT_NE(error_of("tier.nvme.read_gbps*fast").find("'fast' is not a number"), std::string::npos);
  EXPECT_NE(error_of("tier+=x").find("tier+=NAME:like=TIER"), std::string::npos);
  EXPECT_EQ(error_of("tier.nvme.speed*2").rfind("--what-if tier.nvme.speed*2", 0), 0u);
}

TEST(ScenarioEdit, CurrentValueIsTheFiguresPeakInItsUnit) {
  const Scenario s = sample();
  EXPECT_DOUBLE_EQ(current_value(s, "tier.nvme.read_gbps"), 2.0);
  EXPECT_DOUBLE_EQ(current_value(s, "host.memory"), static_cast<double>(std::int64_t{256} << 30));
  EXPECT_DOUBLE_EQ(current_value(s, "host.adam"), 1e10);
}

}  // namespace
}  // namespace mlpo::tune
