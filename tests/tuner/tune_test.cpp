// The tuner's search: sanity properties of what it picks, the plan file it fills in, and
// errors that say which resource is short and by how much.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/rates.hpp"
#include "tests/support/error_of.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/explain.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {
namespace {

using mlpo::testing::io_bound_profile;

TuneRequest request_for(const Profile& profile, std::int64_t ranks = 2) {
  TuneRequest r;
  r.model = find_preset("1b");
  r.shape = ClusterShape{1, ranks, 1, 0, 1};
  r.profile = profile;
  r.simulate_top = 4;
  // bf16 weights and gradients take ~4.1 GiB: the cache can hold only part of the state,
  // so updates stay I/O bound. The profile has no GPU: the CPU backend's model comes on top.
  r.host_memory_budget =
      (std::int64_t{6} << 30) + static_cast<std::int64_t>(cpu_model_bytes(account(r.model, r.shape), r));
  return r;
}

Profile only(const Profile& p, const std::vector<std::string>& names) {
  Profile out = p;
  out.tiers.clear();
  for (const auto& n : names) out.tiers.push_back(*p.find_tier(n));
  return out;
}

std::string error_of(const TuneRequest& r) {
  return mlpo::testing::error_of([&] { tune(r); });
}

TEST(Tune, AddingATierNeverPredictsSlowerThanTheBestPlanWithoutIt) {
  const Profile all = io_bound_profile();
  const double one = score(tune(request_for(only(all, {"nvme"}))).chosen.simulated.prediction);
  const double two = score(tune(request_for(only(all, {"nvme", "pfs"}))).chosen.simulated.prediction);
  EXPECT_LE(two, one * 1.001);
  EXPECT_LT(two, one * 0.9);  // 1 GB/s more on 2 GB/s: clearly faster, not just "no worse"
}

TEST(Tune, BaselineIsSlowerThanTheTunedPlanWhenIoBound) {
  const TuneResult r = tune(request_for(io_bound_profile()));
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_GT(score(r.baseline->simulated.prediction), 1.5 * score(r.chosen.simulated.prediction));
  ASSERT_TRUE(r.chosen.plan.baseline_prediction.has_value());
  EXPECT_EQ(r.baseline->plan.mode, PlanMode::baseline);
}

TEST(Tune, SearchesTheIoSettingsTheProfileMeasuredOnEveryStreamedTier) {
  // nvme alone, I/O bound; at 4 MiB x 4 it streams twice as fast as at its main 1 MiB x 8.
  Profile p = only(io_bound_profile(), {"nvme"});
  TierIoSetting fast;
  fast.block_size = 4 << 20;
  fast.queue_depth = 4;
  fast.read_gbps = {mlpo::testing::point(1, 4)};
  fast.write_gbps = {mlpo::testing::point(1, 4)};
  p.tiers[0].io_settings.push_back(fast);
  const TuneResult r = tune(request_for(p));
  EXPECT_EQ(r.chosen.plan.io_block_size, 4 << 20);
  EXPECT_EQ(r.chosen.plan.io_queue_depth, 4);
  // Slower there: the main setting stays.
  p.tiers[0].io_settings[0].read_gbps = {mlpo::testing::point(1, 1)};
  p.tiers[0].io_settings[0].write_gbps = {mlpo::testing::point(1, 1)};
  const TuneResult slow = tune(request_for(p));
  EXPECT_EQ(slow.chosen.plan.io_block_size, 1 << 20);
  EXPECT_EQ(slow.chosen.plan.io_queue_depth, 8);
  EXPECT_LT(score(r.chosen.simulated.prediction), 0.8 * score(slow.chosen.simulated.prediction));
}

TEST(Tune, PlanFileCarriesPredictionBaselineAlternativesAndReasons) {
  TuneRequest req = request_for(io_bound_profile());
  req.top_k = 2;
  const TuneResult r = tune(req);
  const Plan back = plan_from_json(to_json(r.chosen.plan));  // what --out writes, re-read
  ASSERT_TRUE(back.prediction.has_value());
  EXPECT_EQ(back.prediction->model, "simgrid");
  EXPECT_NEAR(back.prediction->iteration_s, r.chosen.simulated.prediction.iteration_s, 1e-9);
  EXPECT_TRUE(back.baseline_prediction.has_value());
  EXPECT_EQ(back.alternatives.size(), 2u);
  EXPECT_GT(back.explanation.value("predicted_speedup", 0.0), 1.0);
  for (const auto& alt : back.alternatives)
    EXPECT_GE(alt["prediction"]["iteration_s"].get<double>(), back.prediction->iteration_s);
  const std::string text = explain(r, req.profile);
  for (const char* part : {"what bounds each phase", "tier split versus bandwidth",
                           "what each principle saves", "predicted speedup"})
    EXPECT_NE(text.find(part), std::string::npos) << part;
}

TEST(Tune, UpdateOnlyPredictsNoForwardOrBackward) {
  TuneRequest req = request_for(io_bound_profile());
  req.profile.gpus.push_back(mlpo::testing::gpu(2));
  req.options.update_only = true;
  const TuneResult r = tune(req);
  EXPECT_EQ(r.chosen.simulated.prediction.forward_s, 0);
  EXPECT_EQ(r.chosen.simulated.prediction.backward_s, 0);
  EXPECT_NEAR(r.chosen.simulated.prediction.iteration_s, r.chosen.simulated.prediction.update_s, 1e-9);
}

TEST(Tune, ShortHostMemorySaysByHowMuch) {
  TuneRequest req = request_for(io_bound_profile());
  req.host_memory_budget = std::int64_t{1} << 30;  // 1 GiB; bf16 weights + grads alone need ~4.1 GiB
  const std::string e = error_of(req);
  EXPECT_NE(e.find("host memory is short by"), std::string::npos) << e;
  EXPECT_NE(e.find("GiB"), std::string::npos) << e;
  EXPECT_NE(e.find("--host-memory-budget"), std::string::npos) << e;
}

TEST(Tune, ShortStorageSaysByHowMuch) {
  Profile p = io_bound_profile();
  for (auto& t : p.tiers) t.free_bytes = t.capacity_bytes = std::int64_t{1} << 30;
  TuneRequest req = request_for(p);
  req.host_memory_budget = std::int64_t{8} << 30;
  const std::string e = error_of(req);
  EXPECT_NE(e.find("storage is short by"), std::string::npos) << e;
}

TEST(Tune, ShortGpuMemorySaysByHowMuch) {
  TuneRequest req = request_for(io_bound_profile());
  req.profile.gpus.push_back(mlpo::testing::gpu(2));
  req.profile.gpus[0].memory_bytes = std::int64_t{256} << 20;
  const std::string e = error_of(req);
  EXPECT_NE(e.find("GPU memory is short by"), std::string::npos) << e;
  EXPECT_NE(e.find("--update-only skips this check"), std::string::npos) << e;
}

// A 100B-class model (98.6 B parameters) on 4 x 80 GiB at micro-batch 1: ZeRO-3 gathers one
// layer's weights at a time and streams the gradients to the host during backward, so no
// shard of either is resident and it fits (counting both shards, it would need 92 GiB each).
ModelSpec model_100b() {
  ModelSpec s = find_preset("llama2-70b");
  s.name = "test-100b";
  s.layers = 88;
  s.ffn_hidden = 28672;
  s.hidden = 10240;
  s.heads = 80;
  return s;
}

TEST(GpuMemory, HundredBillionModelOnFourEightyGigabyteGpusFitsAtMicroBatchOne) {
  const Accounting a = account(model_100b(), ClusterShape{1, 4, 1, 0, 1});
  ASSERT_GT(a.params.total, 95'000'000'000);
  const GpuMemoryNeed need = gpu_memory_need(a, false);
  EXPECT_LT(need.total(), 80.0 * (1 << 30)) << need.detail();
  EXPECT_LT(need.weights,
            0.05 * static_cast<double>(a.weights_bf16_bytes_per_rank));  // one layer, not the shard
  TuneRequest req;
  req.model = model_100b();
  req.shape = ClusterShape{1, 4, 1, 0, 1};
  req.profile = io_bound_profile();
  req.profile.gpus.push_back(mlpo::testing::gpu(4));
  Plan plan = mlpo::testing::plan_for("test-100b", a.params.total, 1, 4,
                                      {mlpo::testing::plan_tier(req.profile, "nvme", 1.0)});
  req.profile.tiers[1].free_bytes = req.profile.tiers[1].capacity_bytes = std::int64_t{1} << 42;
  req.host_memory_budget = std::int64_t{2} << 40;
  const auto short_of = check_fits(a, plan, req);
  EXPECT_FALSE(short_of.has_value()) << short_of->resource << ": " << short_of->detail;
}

TEST(GpuMemory, OneRankWhoseWeightsDoNotFitIsToldToOffloadThem) {
  // 1b on one 8 GiB GPU: all weights (2.2 GB) and fp32 gradients (4.4 GB) plus activations
  // do not fit; with --param-offload (two layer slots, streamed gradients) they do.
  TuneRequest req = request_for(io_bound_profile(), 1);
  req.profile.gpus.push_back(mlpo::testing::gpu(1));
  req.profile.gpus[0].memory_bytes = std::int64_t{6} << 30;
  const std::string e = error_of(req);
  EXPECT_NE(e.find("GPU memory is short by"), std::string::npos) << e;
  EXPECT_NE(e.find("--param-offload"), std::string::npos) << e;
  req.param_offload = true;
  EXPECT_EQ(error_of(req), "");
}

TEST(GpuMemory, ParamOffloadWithSeveralRanksIsAnError) {
  TuneRequest req = request_for(io_bound_profile(), 2);
  req.param_offload = true;
  EXPECT_NE(error_of(req).find("--param-offload: for one rank only"), std::string::npos) << error_of(req);
}

TEST(GpuMemory, UpdateOnlySaysItSkipsTheCheck) {
  TuneRequest req = request_for(io_bound_profile());
  req.profile.gpus.push_back(mlpo::testing::gpu(2));
  req.profile.gpus[0].memory_bytes = std::int64_t{256} << 20;
  req.options.update_only = true;
  const TuneResult r = tune(req);
  bool said = false;
  for (const auto& w : r.warnings)
    said |= w.find("--update-only skips the GPU memory check") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(GpuMemory, GradientAccumulationKeepsTheFullGradientAndSaysSo) {
  // ZeRO-3 with --grad-accum 4: the executor keeps the whole fp32 gradient on the device.
  const Accounting a = account(model_100b(), ClusterShape{1, 4, 1, 0, 4});
  const GpuMemoryNeed need = gpu_memory_need(a, false);
  EXPECT_GT(need.total(), 80.0 * (1 << 30));
  EXPECT_NE(gpu_memory_advice(a, false, 80.0 * (1 << 30)).find("--grad-accum 1"), std::string::npos);
}

TEST(Baseline, StaysOnNvmeWhenARemoteTierIsFaster) {
  // pfs at 5 GB/s beats nvme at 2 GB/s, but the baseline is ZeRO-3's NVMe offload.
  TuneRequest req = request_for(only(io_bound_profile(), {"nvme", "pfs"}));
  req.profile.tiers[1] = mlpo::testing::tier("pfs", TierKind::remote, 5, 5);
  const Accounting a = account(req.model, req.shape);
  const std::optional<Plan> base = baseline_plan(a, req, std::int64_t{1} << 22);
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(base->tiers[0].name, "nvme");
  req.baseline_tier = "pfs";
  EXPECT_EQ(baseline_plan(a, req, std::int64_t{1} << 22)->tiers[0].name, "pfs");
}

TEST(Baseline, UnknownTierIsAnErrorListingTheTiers) {
  TuneRequest req = request_for(io_bound_profile());
  req.baseline_tier = "ssd";
  const std::string e = error_of(req);
  EXPECT_NE(e.find("--baseline-tier ssd"), std::string::npos) << e;
  for (const char* t : {"shm", "nvme", "pfs"}) EXPECT_NE(e.find(t), std::string::npos) << e;
}

TEST(PlanSpace, WithoutAGpuTheCpuBackendsModelIsInTheHostMemoryNeed) {
  // The CPU backend's "device" memory is host memory: its weights, gradients and activations
  // count against the budget as mlpo-run's own check counts them; not with a GPU, nor for an
  // update-only plan (no model).
  TuneRequest req = request_for(io_bound_profile());
  const Accounting a = account(req.model, req.shape);
  const double model = cpu_model_bytes(a, req);
  EXPECT_DOUBLE_EQ(model, 2 * gpu_memory_need(a, false).total());  // two ranks on the node
  req.param_offload = false;
  req.options.update_only = true;
  EXPECT_EQ(cpu_model_bytes(a, req), 0);
  req.options.update_only = false;
  req.profile.gpus.push_back(mlpo::testing::gpu(2));
  EXPECT_EQ(cpu_model_bytes(a, req), 0);
}

TEST(Baseline, ItsTierIsNamedInThePlanFile) {
  const TuneResult r = tune(request_for(io_bound_profile()));
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_EQ(r.chosen.plan.explanation["baseline_tier"]["name"], "nvme");
  ASSERT_TRUE(r.chosen.plan.baseline_prediction.has_value());
  EXPECT_EQ(r.chosen.plan.baseline_prediction->tiers.at(0).name, "nvme");
}

TEST(PlanSpace, FractionsFollowBandwidthAndCapacityCapsThem) {
  Profile p = only(io_bound_profile(), {"nvme", "pfs"});  // 2 GB/s and 1 GB/s, flat curves
  TuneRequest req = request_for(p);
  const Accounting a = account(req.model, req.shape);
  for (const Plan& plan : candidate_plans(a, req)) {
    if (plan.tiers.size() != 2) continue;
    EXPECT_NEAR(plan.tiers[0].fraction / plan.tiers[1].fraction, 2.0, 1e-6);
    break;
  }
  // Cap nvme at a quarter of the state: it gets exactly that, pfs the rest.
  req.profile.tiers[0].free_bytes =
      static_cast<std::int64_t>(0.25 * 2 * 12.0 * static_cast<double>(a.params_per_rank));
  bool seen = false;
  for (const Plan& plan : candidate_plans(a, req)) {
    if (plan.tiers.size() != 2 || plan.gradients != GradientPolicy::delayed) continue;
    EXPECT_NEAR(plan.tiers[0].fraction, 0.25, 1e-6);
    EXPECT_FALSE(check_fits(a, plan, req).has_value() &&
                 check_fits(a, plan, req)->resource.find("capacity") != std::string::npos);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(PlanSpace, ARemoteTiersShareFollowsItsNodesShareOfTheBackbone) {
  // 4 nodes share a 1 GB/s backbone: the remote tier moves 0.25 GB/s each way for a node, not
  // the 1 GB/s the profile measured from one node alone, and its fraction follows that (split
  // by the full rate, the tier would be the bound of every two-tier plan: the search then kept
  // to the NVMe alone, 2026-12-07 on the testbed).
  const Profile p = only(io_bound_profile(), {"nvme", "pfs"});
  TuneRequest req = request_for(p);
  req.shape.nodes = 4;
  req.options.remote_backbone_gbps = 1.0;
  const Accounting a = account(req.model, req.shape);
  const double nvme = tier_update_bps(p.tiers[0], req.shape.ranks_per_node, 0);
  const double pfs = std::min(tier_update_bps(p.tiers[1], req.shape.ranks_per_node, 0), 2 * 1e9 / 4);
  ASSERT_LT(pfs, tier_update_bps(p.tiers[1], req.shape.ranks_per_node, 0));
  bool seen = false;
  for (const Plan& plan : candidate_plans(a, req)) {
    if (plan.tiers.size() != 2 || plan.tiers[0].concurrency_limit != 0 ||
        plan.tiers[1].concurrency_limit != 0)
      continue;
    EXPECT_NEAR(plan.tiers[0].fraction / plan.tiers[1].fraction, nvme / pfs, 1e-6);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(PlanSpace, RamTierShareIsCappedByTheHostMemoryTheCandidateLeaves) {
  // /dev/shm beside NVMe at 2 GB/s would take over 99 % of the state at Adam's rate (over
  // 80 % even by its 8 GB/s), 10+ GB of RAM for 1b, far over the 6 GiB budget: each candidate
  // gets what its buffers, cache and bf16 copies leave of the budget instead, and fits.
  const Profile p = only(io_bound_profile(), {"shm", "nvme"});
  const TuneRequest req = request_for(p);
  const Accounting a = account(req.model, req.shape);
  const double budget = static_cast<double>(req.host_memory_budget);
  int seen = 0;
  for (const Plan& plan : candidate_plans(a, req)) {
    if (plan.tiers.size() != 2) continue;
    ++seen;
    EXPECT_GT(plan.tiers[0].fraction, 0.0);
    EXPECT_LT(plan.tiers[0].fraction, 0.8);
    EXPECT_FALSE(check_fits(a, plan, req).has_value()) << check_fits(a, plan, req)->resource;
    EXPECT_NEAR(host_memory_need(a, plan, cpu_model_bytes(a, req)).total() / budget, 1.0,
                1e-6);  // the whole budget, no more
  }
  EXPECT_GT(seen, 0);
}

TEST(PlanSpace, TierUpdatedInPlaceCountsAtAdamsRateSoItTakesMoreThanItsBandwidthShare) {
  // /dev/shm is updated in place: no I/O, only Adam, which consumes 1e10 elements/s on the
  // node (2 ranks x 8 threads), 240 GB/s of state read and written, against NVMe's 2 GB/s.
  // By its own 8 GB/s it would get 80 %; with room in host memory it gets 240 / 242 instead.
  const Profile p = only(io_bound_profile(), {"shm", "nvme"});
  TuneRequest req = request_for(p);
  req.host_memory_budget = 0;  // the profile's 256 GiB: no cap
  const Accounting a = account(req.model, req.shape);
  int seen = 0;
  for (const Plan& plan : candidate_plans(a, req)) {
    if (plan.tiers.size() != 2) continue;
    ++seen;
    EXPECT_NEAR(plan.tiers[0].fraction, 240.0 / 242.0, 1e-6);
    EXPECT_EQ(plan.tiers[0].concurrency_limit, 0);  // nothing to limit
  }
  EXPECT_GT(seen, 0);
}

TEST(Tune, HostTierHoldsWhatHostMemoryAllowsAndMovesNothing) {
  // Room for about 4 GiB of state in host memory (of 8.6 GiB for 1b on 2 ranks).
  TuneRequest req = request_for(only(io_bound_profile(), {"shm", "nvme"}));
  req.host_memory_budget = (std::int64_t{9} << 30) +
                           static_cast<std::int64_t>(cpu_model_bytes(account(req.model, req.shape), req));
  const TuneResult r = tune(req);
  ASSERT_EQ(r.chosen.plan.tiers.size(), 2u);
  ASSERT_EQ(r.chosen.plan.tiers[0].name, "shm");
  const Prediction& pred = r.chosen.simulated.prediction;
  EXPECT_EQ(pred.tiers[0].read_bytes + pred.tiers[0].write_bytes, 0);
  EXPECT_GT(pred.tiers[1].read_bytes, 0);
  // Cache and /dev/shm share what the budget leaves: together they fill it.
  const Accounting a = account(req.model, req.shape);
  EXPECT_NEAR(host_memory_need(a, r.chosen.plan, cpu_model_bytes(a, req)).total() /
                  static_cast<double>(req.host_memory_budget),
              1.0, 1e-6);
}

TEST(PlanSpace, BaselineStreamsFromStorageEvenWhereAHostTierCouldHoldIt) {
  // ZeRO-3 offload streams its state: with 256 GiB of host memory /dev/shm (8 GB/s) could
  // hold the baseline, but it would be updated in place; NVMe is the baseline's tier. With
  // no streamed tier at all, /dev/shm it is.
  TuneRequest req = request_for(only(io_bound_profile(), {"shm", "nvme"}));
  req.host_memory_budget = 0;
  const Accounting a = account(req.model, req.shape);
  const std::optional<Plan> base = baseline_plan(a, req, std::int64_t{1} << 22);
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(base->tiers[0].name, "nvme");
  req.profile = only(io_bound_profile(), {"shm"});
  const std::optional<Plan> shm = baseline_plan(a, req, std::int64_t{1} << 22);
  ASSERT_TRUE(shm.has_value());
  EXPECT_EQ(shm->tiers[0].name, "shm");
}

}  // namespace
}  // namespace mlpo::tune
