// What-if: each kind of edit, applied to the machine and re-tuned, moves the prediction the
// way the change should (a faster bounding tier lowers the update, an unused tier's rate
// changes nothing, more memory is never slower, ...).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/what_if.hpp"

namespace mlpo::tune {
namespace {

using mlpo::testing::io_bound_profile;

// `p` with the named tiers only and 6 GiB of host memory: 1b's 12 GiB of state is mostly
// streamed, so its update is I/O bound.
Profile only(const Profile& p, const std::vector<std::string>& names) {
  Profile out = p;
  out.host.memory_bytes = out.host.available_bytes = std::int64_t{6} << 30;
  out.tiers.clear();
  for (const auto& n : names) out.tiers.push_back(*p.find_tier(n));
  return out;
}

TuneRequest request_on(const Profile& profile, bool update_only, std::int64_t ranks = 2) {
  TuneRequest r;
  r.model = find_preset("1b");
  r.shape = ClusterShape{1, ranks, 1, 0, 1};
  r.profile = profile;
  r.simulate_top = 3;
  r.options.update_only = update_only;
  return r;
}

// The predictions before and after `edits` (both sides must fit).
std::pair<Prediction, Prediction> before_after(const TuneRequest& r, const std::vector<std::string>& edits) {
  std::vector<ScenarioEdit> parsed;
  for (const auto& e : edits) parsed.push_back(parse_edit(e));
  const WhatIf w = what_if(r, parsed);
  EXPECT_TRUE(w.before.result.has_value()) << w.before.infeasible;
  EXPECT_TRUE(w.after.result.has_value()) << w.after.infeasible;
  if (!w.before.result || !w.after.result) return {};
  return {w.before.result->chosen.simulated.prediction, w.after.result->chosen.simulated.prediction};
}

TEST(WhatIf, DoublingTheBoundingTiersRateLowersTheUpdate) {
  const auto [before, after] =
      before_after(request_on(only(io_bound_profile(), {"nvme"}), true), {"tier.nvme.gbps*2"});
  EXPECT_LT(after.update_s, 0.7 * before.update_s);
}

TEST(WhatIf, AnUnusedTiersRateChangesNothing) {
  Profile p = only(io_bound_profile(), {"nvme"});
  p.tiers.push_back(mlpo::testing::tier("sata", TierKind::other, 0.001, 0.001));
  const auto [before, after] = before_after(request_on(p, true), {"tier.sata.gbps*2"});
  EXPECT_DOUBLE_EQ(after.iteration_s, before.iteration_s);
}

TEST(WhatIf, AnotherDriveLikeTheBoundingOneLowersTheUpdateAndRemovingATierRaisesIt) {
  const TuneRequest r = request_on(only(io_bound_profile(), {"nvme", "pfs"}), true);
  const auto [before, added] = before_after(r, {"tier+=nvme2:like=nvme"});
  EXPECT_LT(added.update_s, 0.9 * before.update_s);
  const auto [with_pfs, removed] = before_after(r, {"tier-=pfs"});
  EXPECT_GT(removed.update_s, 1.1 * with_pfs.update_s);
}

TEST(WhatIf, MoreHostMemoryCachesMoreAndIsFaster) {
  Profile p = only(io_bound_profile(), {"nvme"});
  p.host.memory_bytes = p.host.available_bytes = std::int64_t{8} << 30;
  const auto [before, after] = before_after(request_on(p, true), {"host.memory=24GiB"});
  EXPECT_LT(after.update_s, 0.8 * before.update_s);
}

TEST(WhatIf, ASlowerAdamSlowsAnUpdateItBounds) {
  Profile p = only(io_bound_profile(), {"shm"});  // in place: the update is Adam alone
  p.host.memory_bytes = p.host.available_bytes = std::int64_t{64} << 30;
  const auto [before, after] = before_after(request_on(p, true), {"host.adam*0.25"});
  EXPECT_GT(after.update_s, 3 * before.update_s);
}

TEST(WhatIf, ComputeAndCommEditsMoveForwardAndBackward) {
  const Profile cpu = mlpo::testing::with_host_mpi(mlpo::testing::cpu_model_profile(20), 5);
  TuneRequest r = request_on(only(cpu, {"shm", "nvme"}), false);
  r.model = find_preset("small");
  const auto [before, faster] = before_after(r, {"host.compute*2"});
  EXPECT_LT(faster.forward_s, 0.7 * before.forward_s);
  const auto [same, slow_comm] = before_after(r, {"comm.host_mpi.gbps*0.01"});
  EXPECT_GT(slow_comm.forward_s + slow_comm.backward_s, 1.2 * (same.forward_s + same.backward_s));
  const auto [one, two] = before_after(r, {"grad_accum=2"});
  EXPECT_GT(two.forward_s, 1.8 * one.forward_s);
}

TEST(WhatIf, GpuEditsMoveTheGpuTerms) {
  Profile p = only(io_bound_profile(), {"shm", "nvme"});
  p.gpus = {mlpo::testing::gpu(2)};
  const TuneRequest r = request_on(p, false);
  const auto [before, faster] = before_after(r, {"gpu.tflops*2"});
  EXPECT_LT(faster.forward_s, 0.6 * before.forward_s);
  const auto [same, slow_pcie] = before_after(r, {"gpu.pcie_gbps=0.5"});
  EXPECT_GT(slow_pcie.backward_s + slow_pcie.update_s, same.backward_s + same.update_s);
}

TEST(WhatIf, MoreNodesShrinkEachRanksShardAndItsUpdate) {
  const auto [before, after] =
      before_after(request_on(only(io_bound_profile(), {"nvme"}), true), {"nodes=2"});
  EXPECT_LT(after.update_s, 0.6 * before.update_s);
}

TEST(WhatIf, MoreNodesAreComparedByTokensPerSecondToo) {
  TuneRequest r = request_on(only(io_bound_profile(), {"nvme"}), false);
  r.profile.gpus = {mlpo::testing::gpu(2)};
  const WhatIf w = what_if(r, {parse_edit("nodes=2")});
  ASSERT_TRUE(w.before.result && w.after.result);
  const Json j = to_json(w);
  const double before = j.at("as_profiled").at("tokens_per_s").get<double>();
  const double after = j.at("with_edits").at("tokens_per_s").get<double>();
  // Twice the ranks, each iteration twice the tokens, and each rank's update on half the state.
  const Prediction& p = w.before.result->chosen.simulated.prediction;
  const std::int64_t seq = w.before.result->chosen.plan.cluster.seq_len;
  EXPECT_NEAR(before, static_cast<double>(2 * seq) / p.iteration_s, 1e-6 * before);
  EXPECT_GT(after, 2 * before);
  EXPECT_NE(format_what_if(w).find("tokens/s (cluster)"), std::string::npos);
}

TEST(WhatIf, ABackboneLimitSlowsARemoteTier) {
  const auto [before, after] =
      before_after(request_on(only(io_bound_profile(), {"pfs"}), true), {"remote_backbone_gbps=0.25"});
  EXPECT_GT(after.update_s, 1.5 * before.update_s);
}

TEST(WhatIf, AnEditThatLeavesNoPlanSaysWhyAndABadEditStopsBeforeAnyTune) {
  const TuneRequest r = request_on(only(io_bound_profile(), {"nvme"}), true);
  const WhatIf w = what_if(r, {parse_edit("tier.nvme.free=1GiB")});
  ASSERT_TRUE(w.before.result.has_value());
  EXPECT_FALSE(w.after.result.has_value());
  EXPECT_NE(w.after.infeasible.find("short by"), std::string::npos) << w.after.infeasible;
  EXPECT_NE(format_what_if(w).find("no plan fits"), std::string::npos);
  EXPECT_THROW(what_if(r, {parse_edit("tier.ssd.read_gbps*2")}), Error);
}

}  // namespace
}  // namespace mlpo::tune
