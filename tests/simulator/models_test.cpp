// The analytic and SimGrid models of an iteration: the sanity properties the tuner relies on
// (bandwidth bounds, monotonicity, agreement between models, contention, symmetry).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/adam_split.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/rates.hpp"
#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tests/support/mentions.hpp"
#include "tests/support/sample_inputs.hpp"

namespace mlpo::sim {
namespace {

using mlpo::testing::cpu_model_profile;
using mlpo::testing::io_bound_profile;
using mlpo::testing::plan_for;
using mlpo::testing::plan_tier;

const SimulationOptions kUpdateOnly{.update_only = true};

Accounting accounting(const char* model, std::int64_t nodes, std::int64_t ranks) {
  return account(find_preset(model), ClusterShape{nodes, ranks, 1, 0, 1});
}

// Elements one rank moves per pass over its subgroups: whole extents, the short last
// subgroup's too, as the executor reads and writes them.
double extent_elements(const Accounting& a, const Plan& plan) {
  const std::int64_t s = std::min(plan.subgroup_elements, a.params_per_rank);
  return static_cast<double>((a.params_per_rank + s - 1) / s * s);
}

// The I/O-bound profile with measured read+write overlap on every tier: with reads and
// writes in flight at once, reads get `read_share` and writes `write_share` of their alone
// bandwidth (at every stream count).
Profile overlapping_profile(double read_share, double write_share) {
  Profile p = io_bound_profile();
  for (TierProfile& t : p.tiers) {
    t.mixed_read_gbps = t.read_gbps;
    t.mixed_write_gbps = t.write_gbps;
    for (auto& pt : t.mixed_read_gbps)
      pt.value.median = pt.value.min = pt.value.max = pt.value.median * read_share;
    for (auto& pt : t.mixed_write_gbps)
      pt.value.median = pt.value.min = pt.value.max = pt.value.median * write_share;
  }
  return p;
}

TEST(SimGridModel, OneTierUpdateTakesBytesOverBandwidthWhenIoBound) {
  const Profile profile = io_bound_profile();
  const Accounting a = accounting("1b", 1, 1);
  const Plan plan = plan_for("1b", a.params.total, 1, 1, {plan_tier(profile, "nvme", 1.0)});
  const SimulationResult r = simulate(a, profile, plan, kUpdateOnly);
  const double bytes = 24.0 * static_cast<double>(a.params_per_rank);
  EXPECT_NEAR(r.prediction.update_s / (bytes / 2e9), 1.0, 0.05);
  ASSERT_EQ(r.prediction.tiers.size(), 1u);
  EXPECT_NEAR(r.prediction.tiers[0].read_bytes, 12.0 * extent_elements(a, plan), 1.0);
  EXPECT_NEAR(r.prediction.tiers[0].write_bytes, 12.0 * extent_elements(a, plan), 1.0);
  EXPECT_GT(r.tiers[0].busy_fraction, 0.9);
}

TEST(Models, AnalyticAndSimGridAgreeWithinTenPercentOnIoBoundPlans) {
  for (const Profile& profile :
       {io_bound_profile(), overlapping_profile(0.75, 0.5), overlapping_profile(0.9, 0.9)}) {
    const Accounting a = accounting("1b", 1, 4);
    std::vector<Plan> plans;
    plans.push_back(plan_for("1b", a.params.total, 1, 4, {plan_tier(profile, "nvme", 1.0)}));
    plans.push_back(plan_for("1b", a.params.total, 1, 4,
                             {plan_tier(profile, "nvme", 0.5), plan_tier(profile, "pfs", 0.5)}));
    plans.push_back(plan_for("1b", a.params.total, 1, 4,
                             {plan_tier(profile, "shm", 0.7, 2), plan_tier(profile, "nvme", 0.2, 1),
                              plan_tier(profile, "pfs", 0.1, 1)}));
    Plan cached = plans[1];
    cached.host_cache_subgroups = 8;
    plans.push_back(cached);
    plans.push_back(mlpo::testing::baseline_of(plans[0], plans[0].tiers[0]));
    const auto sims = simulate_all(a, profile, plans, kUpdateOnly, 2);
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const AnalyticBreakdown an = analyze(a, profile, plans[i], kUpdateOnly);
      EXPECT_NEAR(an.prediction.update_s / sims[i].prediction.update_s, 1.0, 0.10)
          << "plan " << i << " bound " << an.update_bound
          << (profile.tiers[0].has_mixed() ? " (mixed curves)" : "");
    }
  }
}

TEST(Models, MeasuredReadWriteOverlapSetsTheOneTierUpdateTime) {
  // Alone each direction streams at the tier's bandwidth b; together reads get 0.75 b and
  // writes 0.5 b. Per element 12 B each way: both run at once until the reads are done
  // (12/0.75b), the writes have then moved 0.5 x 12/0.75 = 8 B and write the last 4 B alone
  // at b: 16/b + 4/b = 20/b per element, where time-sharing would give 24/b.
  const Profile p = overlapping_profile(0.75, 0.5);
  const Accounting a = accounting("1b", 1, 1);
  const double elements = static_cast<double>(a.params_per_rank);
  for (const char* name : {"nvme", "pfs"}) {
    const double b = p.find_tier(name)->read_at(1) * 1e9;
    const Plan plan = plan_for("1b", a.params.total, 1, 1, {plan_tier(p, name, 1.0)});
    const double expected = 20.0 * elements / b;
    EXPECT_NEAR(simulate(a, p, plan, kUpdateOnly).prediction.update_s / expected, 1.0, 0.05) << name;
    EXPECT_NEAR(analyze(a, p, plan, kUpdateOnly).prediction.update_s / expected, 1.0, 0.05) << name;
    // Without the mixed curves the same tier time-shares: bytes / bandwidth.
    EXPECT_NEAR(
        simulate(a, io_bound_profile(), plan, kUpdateOnly).prediction.update_s / (24.0 * elements / b), 1.0,
        0.05)
        << name;
  }
}

TEST(Models, MixedCurvesOfATimeSharingDeviceGiveTheTimeSharingPrediction) {
  // Half of each direction's bandwidth when both are busy is what time-sharing means: the
  // measured curves and the fallback model must then agree.
  const Accounting a = accounting("1b", 1, 2);
  const Profile shared = io_bound_profile();
  const Profile measured = overlapping_profile(0.5, 0.5);
  const Plan plan = plan_for("1b", a.params.total, 1, 2, {plan_tier(shared, "nvme", 1.0)});
  const auto r = simulate_all(a, shared, {plan}, kUpdateOnly, 1);
  EXPECT_NEAR(simulate(a, measured, plan, kUpdateOnly).prediction.update_s / r[0].prediction.update_s, 1.0,
              0.03);
  EXPECT_NEAR(analyze(a, measured, plan, kUpdateOnly).prediction.update_s /
                  analyze(a, shared, plan, kUpdateOnly).prediction.update_s,
              1.0, 0.03);
}

TEST(SimGridModel, RanksOfANodeFallOutOfStepUnderACombinedSlotLimit) {
  // Two ranks, a reader and a writer each, under k = 2 slots shared by reads and writes, on a
  // tier whose reads and writes overlap fully. Started in lockstep, every rank's reads would
  // take the slots together, then every rank's writes: twice the unlimited update. The
  // executor's ranks are never in step; skewed by a few microseconds, neither are the model's,
  // and reads and writes mostly share the slots (1.3x the unlimited update; 2.0x in lockstep).
  const Accounting a = accounting("1b", 1, 2);
  const Profile p = overlapping_profile(1.0, 1.0);
  const Plan unlimited = plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "nvme", 1.0)});
  const Plan limited = plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "nvme", 1.0, 2)});
  const auto r = simulate_all(a, p, {unlimited, limited}, kUpdateOnly, 2);
  EXPECT_LT(r[1].prediction.update_s, 1.5 * r[0].prediction.update_s);
  EXPECT_GE(r[1].prediction.update_s, 0.99 * r[0].prediction.update_s);
}

TEST(Models, ALimitOnTheRemoteTierCountsTheTransfersOfEveryNode) {
  // The remote tier's slot files live on the shared file system: k = 1 there lets one
  // transfer of the whole cluster run at a time. Two nodes of one rank each, without a
  // backbone cap (each node's own link is the bound, its reads and writes time-sharing it), so
  // one slot for both takes twice as long as no limit: SimGrid simulates both nodes (the slots
  // are shared), the analytic model gives each node the slot half the time.
  const Accounting a = accounting("1b", 2, 1);
  const Profile p = io_bound_profile();
  const Plan one = plan_for("1b", a.params.total, 2, 1, {plan_tier(p, "pfs", 1.0, 1)});
  const Plan none = plan_for("1b", a.params.total, 2, 1, {plan_tier(p, "pfs", 1.0)});
  const auto r = simulate_all(a, p, {one, none}, kUpdateOnly, 2);
  EXPECT_EQ(r[0].simulated_nodes, 2);
  EXPECT_NEAR(r[0].prediction.update_s / r[1].prediction.update_s, 2.0, 0.1);
  EXPECT_NEAR(analyze(a, p, one, kUpdateOnly).prediction.update_s /
                  analyze(a, p, none, kUpdateOnly).prediction.update_s,
              2.0, 0.1);
  // A node-local tier's limit stays the node's own: one simulated node.
  const Plan local = plan_for("1b", a.params.total, 2, 1, {plan_tier(p, "nvme", 1.0, 1)});
  EXPECT_EQ(simulate(a, p, local, kUpdateOnly).simulated_nodes, 1);
}

TEST(Models, ProfileWithoutMixedFiguresFallsBackWithOneWarningLine) {
  const Accounting a = accounting("small", 1, 1);
  const Profile old = io_bound_profile();
  const Plan plan =
      plan_for("small", a.params.total, 1, 1, {plan_tier(old, "nvme", 0.5), plan_tier(old, "pfs", 0.5)});
  const SimulationResult r = simulate(a, old, plan, kUpdateOnly);
  int lines = 0;
  for (const auto& w : r.warnings) lines += w.find("no mixed read+write figures") != std::string::npos;
  EXPECT_EQ(lines, 1);
  EXPECT_TRUE(mlpo::testing::mentions(r.warnings, "'nvme', 'pfs'"));
  EXPECT_FALSE(mlpo::testing::mentions(simulate(a, overlapping_profile(0.8, 0.8), plan, kUpdateOnly).warnings,
                                       "mixed"));
  EXPECT_TRUE(
      mlpo::testing::mentions(analyze(a, old, plan, kUpdateOnly).warnings, "no mixed read+write figures"));
}

TEST(Models, MoreBandwidthNeverPredictsSlower) {
  for (const Profile& slow :
       {io_bound_profile(), overlapping_profile(0.7, 0.6), overlapping_profile(0.5, 1.5)}) {
    const Accounting a = accounting("1b", 1, 2);
    const Plan plan =
        plan_for("1b", a.params.total, 1, 2, {plan_tier(slow, "nvme", 0.6), plan_tier(slow, "pfs", 0.4)});
    std::vector<Profile> profiles{slow};
    for (double factor : {1.5, 3.0}) {
      Profile faster = slow;
      for (auto& t : faster.tiers)
        for (auto* curve : {&t.read_gbps, &t.write_gbps, &t.mixed_read_gbps, &t.mixed_write_gbps})
          for (auto& p : *curve) p.value.median *= factor;
      profiles.push_back(faster);
    }
    double previous_sim = 1e30, previous_analytic = 1e30;
    for (const Profile& p : profiles) {
      const double sim = simulate(a, p, plan, {}).prediction.iteration_s;
      const double an = analyze(a, p, plan, {}).prediction.iteration_s;
      EXPECT_LE(sim, previous_sim * (1 + 1e-9));
      EXPECT_LE(an, previous_analytic * (1 + 1e-9));
      previous_sim = sim;
      previous_analytic = an;
    }
  }
}

TEST(SimGridModel, FallingConcurrencyCurveMakesASlotLimitOfOneFaster) {
  // A device that loses throughput under concurrent streams (2 GB/s alone, 0.8 GB/s at 4):
  // the node-wide limit k = 1 must beat no limit with 4 ranks hammering it.
  Profile p = io_bound_profile();
  TierProfile& nvme = p.tiers[1];
  nvme.read_gbps = {mlpo::testing::point(1, 2.0), mlpo::testing::point(4, 0.8)};
  nvme.write_gbps = nvme.read_gbps;
  const Accounting a = accounting("1b", 1, 4);
  const Plan unlimited = plan_for("1b", a.params.total, 1, 4, {plan_tier(p, "nvme", 1.0, 0)});
  const Plan limited = plan_for("1b", a.params.total, 1, 4, {plan_tier(p, "nvme", 1.0, 1)});
  const auto r = simulate_all(a, p, {unlimited, limited}, kUpdateOnly, 2);
  EXPECT_LT(r[1].prediction.update_s, 0.8 * r[0].prediction.update_s);
  EXPECT_GT(r[1].tiers[0].slot_wait_s, 0.0);
  // And the k = 1 plan runs at the one-stream bandwidth.
  EXPECT_NEAR(r[1].prediction.update_s / (4 * 24.0 * static_cast<double>(a.params_per_rank) / 2e9), 1.0,
              0.05);
}

TEST(SimGridModel, OneSimulatedNodeMatchesTheFullClusterOnASharedBackbone) {
  const Profile p = io_bound_profile();
  const Accounting a = accounting("1b", 3, 2);
  const Plan plan =
      plan_for("1b", a.params.total, 3, 2, {plan_tier(p, "nvme", 0.4), plan_tier(p, "pfs", 0.6)});
  SimulationOptions one = kUpdateOnly;
  one.remote_backbone_gbps = 0.6;  // 0.2 GB/s per node and direction: the backbone binds
  SimulationOptions full = one;
  full.full_cluster = true;
  const auto r = simulate_all(a, p, {plan, plan}, one, 1);
  const SimulationResult f = simulate(a, p, plan, full);
  EXPECT_EQ(f.simulated_nodes, 3);
  EXPECT_NEAR(r[0].prediction.update_s / f.prediction.update_s, 1.0, 0.02);
  // The backbone binds: slower than without a shared limit.
  EXPECT_GT(r[0].prediction.update_s, 1.2 * simulate(a, p, plan, kUpdateOnly).prediction.update_s);
}

TEST(Models, BaselineIsSlowerThanTheMlpPlanWhenIoBound) {
  const Profile p = io_bound_profile();
  const Accounting a = accounting("1b", 1, 2);
  Plan mlp = plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "shm", 0.6), plan_tier(p, "nvme", 0.4)});
  mlp.host_cache_subgroups = 4;
  const Plan base = mlpo::testing::baseline_of(mlp, plan_tier(p, "nvme", 1.0));
  const auto r = simulate_all(a, p, {mlp, base}, {}, 2);
  EXPECT_GT(r[1].prediction.iteration_s, r[0].prediction.iteration_s);
  EXPECT_GT(analyze(a, p, base, {}).prediction.iteration_s, analyze(a, p, mlp, {}).prediction.iteration_s);
  // Baseline moves 28 B/param: 16 read + 12 written, plus 4 flushed during backward.
  EXPECT_NEAR(r[1].prediction.tiers[0].read_bytes, 2 * 16.0 * extent_elements(a, base), 2.0);
  EXPECT_NEAR(r[1].prediction.tiers[0].write_bytes, 2 * 16.0 * extent_elements(a, base), 2.0);
}

TEST(Models, HostTierMovesNoBytesAndIsNoSlowerThanStreamingIt) {
  // /dev/shm (kind host) is updated in place: no reads, writes, gradient flush or streams
  // there. The same plan with that tier streamed (kind nvme, its 8 GB/s curves) is slower.
  const Profile p = io_bound_profile();
  const Accounting a = accounting("1b", 1, 2);
  for (GradientPolicy gradients : {GradientPolicy::delayed, GradientPolicy::flush_fp32}) {
    Plan in_place =
        plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "shm", 0.6), plan_tier(p, "nvme", 0.4)});
    in_place.gradients = gradients;
    in_place.host_cache_subgroups = 4;
    Plan streamed = in_place;
    streamed.tiers[0].kind = TierKind::nvme;
    SimulationOptions timeline;
    timeline.timeline = true;
    const auto r = simulate_all(a, p, {in_place, streamed}, timeline, 2);
    const AnalyticBreakdown an = analyze(a, p, in_place, {});
    const char* policy = to_string(gradients);
    for (const Prediction* pred : {&r[0].prediction, &an.prediction}) {
      EXPECT_EQ(pred->tiers[0].read_bytes, 0) << pred->model << " " << policy;
      EXPECT_EQ(pred->tiers[0].write_bytes, 0) << pred->model << " " << policy;
      EXPECT_EQ(pred->tiers[0].busy_s, 0) << pred->model << " " << policy;
    }
    for (const auto& e : r[0].timeline) EXPECT_NE(e.lane, "tier shm") << policy;
    // Both models move the same NVMe bytes: they describe the same schedule.
    EXPECT_NEAR(r[0].prediction.tiers[1].read_bytes, an.prediction.tiers[1].read_bytes, 2.0) << policy;
    EXPECT_NEAR(r[0].prediction.tiers[1].write_bytes, an.prediction.tiers[1].write_bytes, 2.0) << policy;
    EXPECT_GT(r[1].prediction.tiers[0].read_bytes, 0) << policy;
    EXPECT_LE(r[0].prediction.update_s, r[1].prediction.update_s) << policy;
    EXPECT_LE(an.prediction.update_s, analyze(a, p, streamed, {}).prediction.update_s) << policy;
    EXPECT_LE(r[0].prediction.iteration_s, r[1].prediction.iteration_s) << policy;
  }
}

TEST(Models, AllStateInPlaceIsAdamBoundAndNeedsNoTierFigures) {
  // A `memory` tier is not in the profile: it moves nothing, so it needs no figures. The
  // update is then CPU Adam alone: R x P elements at the node's rate (4 ranks x 4 threads on
  // 16 cores: 1e10 elements/s).
  const Profile p = io_bound_profile();
  const Accounting a = accounting("1b", 1, 4);
  const Plan plan = plan_for("1b", a.params.total, 1, 4,
                             {PlanTier{"ram", "", TierKind::memory, 0.5, 0}, plan_tier(p, "shm", 0.5)});
  const double expected = 4.0 * static_cast<double>(a.params_per_rank) / 1e10;
  const SimulationResult r = simulate(a, p, plan, kUpdateOnly);
  EXPECT_NEAR(r.prediction.update_s / expected, 1.0, 0.05);
  EXPECT_EQ(r.prediction.stall_s, 0);
  EXPECT_EQ(r.cache_hits, 0);
  const AnalyticBreakdown an = analyze(a, p, plan, kUpdateOnly);
  EXPECT_NEAR(an.prediction.update_s / expected, 1.0, 0.05);
  EXPECT_EQ(an.update_bound, "CPU Adam");
  for (const auto& t : an.prediction.tiers) EXPECT_EQ(t.read_bytes + t.write_bytes, 0) << t.name;
}

TEST(Models, EachSubgroupsAdamWWaitsForThePoolsWakeUp) {
  // host.pool_dispatch_s: every subgroup's AdamW call that spans more than one of the rank's
  // threads waits that long on top of its work (ranks side by side), in both models; one
  // thread per rank waits for nothing.
  Profile p = io_bound_profile(), woken = p;
  woken.host.pool_dispatch_s = Measurement{1e-3, 1e-3, 1e-3, 1, 0};
  const Accounting a = accounting("1b", 1, 4);
  const Plan plan = plan_for("1b", a.params.total, 1, 4, {PlanTier{"ram", "", TierKind::memory, 1.0, 0}});
  const double subgroups = std::ceil(static_cast<double>(a.params_per_rank) / plan.subgroup_elements);
  const double expected = subgroups * 1e-3;
  const double simulated = simulate(a, woken, plan, kUpdateOnly).prediction.update_s -
                           simulate(a, p, plan, kUpdateOnly).prediction.update_s;
  EXPECT_NEAR(simulated / expected, 1.0, 0.02);
  const double analyzed = analyze(a, woken, plan, kUpdateOnly).prediction.update_s -
                          analyze(a, p, plan, kUpdateOnly).prediction.update_s;
  EXPECT_NEAR(analyzed / expected, 1.0, 0.02);
  // 16 ranks on the 16 cores: one thread each, the pool is never woken.
  const Accounting one = accounting("1b", 1, 16);
  const Plan each = plan_for("1b", one.params.total, 1, 16, {PlanTier{"ram", "", TierKind::memory, 1.0, 0}});
  EXPECT_NEAR(simulate(one, woken, each, kUpdateOnly).prediction.update_s,
              simulate(one, p, each, kUpdateOnly).prediction.update_s, 1e-9);
}

TEST(Models, EachUpdateStartsAndJoinsItsReaderAndWriterThreads) {
  // host.thread_start_s: a rank's update starts a reader per tier it reads from and a writer
  // per tier it writes back to, and joins them, in both models: two streamed tiers, four
  // threads; all state in place, none.
  Profile p = io_bound_profile();
  TierProfile second = p.tiers[1];  // nvme
  second.name = "nvme2";
  second.path = "/tmp/nvme2";
  p.tiers.push_back(second);
  Profile started = p;
  started.host.thread_start_s = Measurement{1e-3, 1e-3, 1e-3, 1, 0};
  const Accounting a = accounting("small", 1, 2);
  const Plan streamed =
      plan_for("small", a.params.total, 1, 2, {plan_tier(p, "nvme", 0.5), plan_tier(p, "nvme2", 0.5)});
  EXPECT_NEAR(simulate(a, started, streamed, kUpdateOnly).prediction.update_s -
                  simulate(a, p, streamed, kUpdateOnly).prediction.update_s,
              4e-3, 1e-4);
  EXPECT_NEAR(analyze(a, started, streamed, kUpdateOnly).prediction.update_s -
                  analyze(a, p, streamed, kUpdateOnly).prediction.update_s,
              4e-3, 1e-9);
  const Plan in_place = plan_for("small", a.params.total, 1, 2, {plan_tier(p, "shm", 1.0)});
  EXPECT_NEAR(simulate(a, started, in_place, kUpdateOnly).prediction.update_s,
              simulate(a, p, in_place, kUpdateOnly).prediction.update_s, 1e-9);
  EXPECT_NEAR(analyze(a, started, in_place, kUpdateOnly).prediction.update_s,
              analyze(a, p, in_place, kUpdateOnly).prediction.update_s, 1e-12);
}

TEST(SimGridModel, GpuForwardAndBackwardFollowFlopsAndUpdateOnlySkipsThem) {
  Profile p = io_bound_profile();
  p.gpus.push_back(mlpo::testing::gpu(2));
  const Accounting a = accounting("1b", 1, 2);
  const Plan plan = plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "shm", 1.0)});
  const SimulationResult full = simulate(a, p, plan, {});
  const double fwd = a.hardware_flops_per_token / 4 * static_cast<double>(a.shape.seq_len) / 400e12;
  EXPECT_NEAR(full.prediction.forward_s / fwd, 1.0, 0.01);
  EXPECT_GE(full.prediction.backward_s, 3 * fwd * 0.99);
  EXPECT_NEAR(full.prediction.iteration_s,
              full.prediction.forward_s + full.prediction.backward_s + full.prediction.update_s, 1e-9);
  const SimulationResult upd = simulate(a, p, plan, kUpdateOnly);
  EXPECT_EQ(upd.prediction.forward_s, 0);
  EXPECT_EQ(upd.prediction.backward_s, 0);
  EXPECT_NEAR(upd.prediction.update_s / full.prediction.update_s, 1.0, 0.01);
}

TEST(Models, CpuForwardAndBackwardArePartByPartAtTheProfilesMeasuredRates) {
  // The CPU backend's measured figures: a layer and the head each at their own rate, forward
  // and backward (core/accounting.hpp's FLOP counts, backward 3x forward), the last layer's
  // backward without its recompute (one layer forward less); one rank.
  Profile p = io_bound_profile();
  p.host.cpu_gemm_gflops.median = 100;  // not used once the model figures are there
  ModelComputeFigures& m = p.host.cpu_model;
  m.model = "small";
  m.micro_batch = 1;
  m.seq_len = 64;
  m.layer_forward_gflops.median = 20;
  m.layer_backward_gflops.median = 15;
  m.head_forward_gflops.median = 40;
  m.head_backward_gflops.median = 10;
  const Accounting a = account(find_preset("small"), ClusterShape{1, 1, 2, 64, 3});  // micro-batch 2, accum 3
  Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "shm", 1.0)});
  plan.cluster = a.shape;
  const double tokens = 2.0 * 64 * 3;
  const double layer = layer_forward_flops_per_token(a.spec, 64) * tokens;
  const double head = head_forward_flops_per_token(a.spec) * tokens;
  const double L = static_cast<double>(a.spec.layers);
  const double forward = L * layer / 20e9 + head / 40e9;
  const double backward = L * 3 * layer / 15e9 - layer / 20e9 + 3 * head / 10e9;
  const AnalyticBreakdown analytic = analyze(a, p, plan, {});
  EXPECT_NEAR(analytic.prediction.forward_s / forward, 1.0, 1e-9);
  EXPECT_NEAR(analytic.prediction.backward_s / backward, 1.0, 1e-9);
  const SimulationResult sim = simulate(a, p, plan, {});
  EXPECT_NEAR(sim.prediction.forward_s / forward, 1.0, 0.01);
  EXPECT_NEAR(sim.prediction.backward_s / backward, 1.0, 0.01);
  EXPECT_TRUE(mlpo::testing::mentions(sim.warnings, "host.cpu_model"));
  // Without the model figures the GEMM rate times everything (and says what it leaves out).
  p.host.cpu_model = {};
  const AnalyticBreakdown gemm = analyze(a, p, plan, {});
  EXPECT_NEAR(gemm.prediction.forward_s / ((L * layer + head) / 100e9), 1.0, 1e-9);
  EXPECT_TRUE(mlpo::testing::mentions(simulate(a, p, plan, {}).warnings, "GEMM only"));
}

TEST(Models, ACpuModelMeasuredAtAnotherRunShapeIsNamedWithTheProfileToMake) {
  // The CPU backend's rate at small widths grows with the tokens per call: a profile measured
  // at 2x fewer or more tokens than the predicted shape says so, with the command that fixes it.
  Profile p = cpu_model_profile();
  // The warning's advice for that shape, from both models alike ("" when none).
  auto advice = [&](std::int64_t micro_batch, std::int64_t seq_len) {
    const Accounting a = account(find_preset("small"), ClusterShape{1, 1, micro_batch, seq_len, 1});
    Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "shm", 1.0)});
    plan.cluster = a.shape;
    const std::string fix = "mlpo-profile --model small --micro-batch " + std::to_string(micro_batch) +
                            " --seq-len " + std::to_string(seq_len);
    const bool analytic = mlpo::testing::mentions(analyze(a, p, plan, {}).warnings, fix);
    EXPECT_EQ(analytic, mlpo::testing::mentions(simulate(a, p, plan, {}).warnings, fix));
    EXPECT_EQ(analytic, mlpo::testing::mentions(simulate(a, p, plan, {}).warnings,
                                                "measured at micro-batch 1 x seq 64"));
    return analytic;
  };
  EXPECT_FALSE(advice(1, 64));
  EXPECT_FALSE(advice(1, 96));  // 1.5x the tokens: close enough
  EXPECT_TRUE(advice(4, 64));
  EXPECT_TRUE(advice(1, 16));
  // The update phase alone has no forward/backward to warn about.
  const Accounting a = account(find_preset("small"), ClusterShape{1, 1, 4, 64, 1});
  Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "shm", 1.0)});
  plan.cluster = a.shape;
  EXPECT_FALSE(mlpo::testing::mentions(analyze(a, p, plan, kUpdateOnly).warnings, "measured at micro-batch"));
}

TEST(Models, ParamOffloadOnTheCpuCopiesEachPartsWeightsBeforeItRuns) {
  // mlpo-run --param-offload on the CPU backend: every part's bf16 weights are copied from
  // host memory before its compute, in forward and (all but the embedding) in backward, at
  // the profile's one-thread memcpy rate.
  Profile p = cpu_model_profile();
  p.host.memcpy_gbps_single.median = 4;
  const Accounting a = account(find_preset("small"), ClusterShape{1, 1, 1, 64, 1});
  Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "shm", 1.0)});
  plan.cluster = a.shape;
  SimulationOptions offload;
  offload.param_offload = true;
  const double all = static_cast<double>(a.params.total) * 2 / 4e9;
  const double embedding = static_cast<double>(a.params.embedding) * 2 / 4e9;
  const AnalyticBreakdown resident = analyze(a, p, plan, {});
  const AnalyticBreakdown copied = analyze(a, p, plan, offload);
  EXPECT_NEAR(copied.prediction.forward_s - resident.prediction.forward_s, all, all * 1e-9);
  EXPECT_NEAR(copied.prediction.backward_s - resident.prediction.backward_s, all - embedding, all * 1e-9);
  const SimulationResult sim = simulate(a, p, plan, offload);
  EXPECT_NEAR(sim.prediction.forward_s / copied.prediction.forward_s, 1.0, 0.01);
  EXPECT_NEAR(sim.prediction.backward_s / copied.prediction.backward_s, 1.0, 0.01);
}

TEST(SimGridModel, AdamRunsOnTheNodeCpuSharedByItsRanks) {
  // All state cached: the update is CPU Adam alone, R x P elements at the node's rate for R
  // ranks at once (4 ranks x 4 threads on 16 cores: 1e10 elements/s), GPUs or not.
  Profile p = io_bound_profile();
  const Accounting a = accounting("1b", 1, 4);
  Plan plan = plan_for("1b", a.params.total, 1, 4, {plan_tier(p, "nvme", 1.0)});
  plan.host_cache_subgroups = 1 << 20;
  const double expected = 4.0 * static_cast<double>(a.params_per_rank) / 1e10;
  EXPECT_NEAR(simulate(a, p, plan, kUpdateOnly).prediction.update_s / expected, 1.0, 0.05);
  p.gpus.push_back(mlpo::testing::gpu(4));
  EXPECT_NEAR(simulate(a, p, plan, kUpdateOnly).prediction.update_s / expected, 1.0, 0.05);
  // The last, shorter subgroup keeps fewer threads busy (core/adam_split.hpp): 0.1 % longer.
  EXPECT_NEAR(analyze(a, p, plan, kUpdateOnly).adam_s / expected, 1.0, 2e-3);
}

TEST(Models, ATierThatMovesNothingIsNeverTheUpdatesBound) {
  // Every subgroup cached: the tier moves 0 B, so the bound is CPU Adam even when the profile
  // measured that I/O and Adam slow each other (a tier's shared time then equals Adam's; it
  // was named as the bound before).
  Profile p = io_bound_profile();
  for (TierProfile& t : p.tiers) {
    t.io_ratio_adam_busy = 0.65;
    t.adam_ratio_io_busy = 0.78;
  }
  const Accounting a = accounting("1b", 1, 1);
  Plan plan = plan_for("1b", a.params.total, 1, 1, {plan_tier(p, "nvme", 1.0)});
  plan.host_cache_subgroups = 1 << 20;
  const AnalyticBreakdown an = analyze(a, p, plan, kUpdateOnly);
  ASSERT_EQ(an.prediction.tiers[0].read_bytes + an.prediction.tiers[0].write_bytes, 0);
  EXPECT_EQ(an.update_bound, "CPU Adam");
  plan.host_cache_subgroups = 0;  // the tier streams: it is the bound again
  EXPECT_NE(analyze(a, p, plan, kUpdateOnly).update_bound.find("tier nvme"), std::string::npos);
}

TEST(Models, ASubgroupOfOneIntegrityChunkRunsAdamOnOneThread) {
  // All state cached, one rank on 16 cores: CPU Adam alone. With CRC on, a subgroup of one
  // 16 Ki-element chunk keeps one thread busy (core/adam_split.hpp), so its Adam takes the
  // curve's 16-thread rate over its one-thread rate longer; 16 chunks keep all 16 busy.
  Profile p = io_bound_profile();
  p.host.crc32c_gbps = {};  // the same Adam curve with CRC on and off: only the split differs
  const Accounting a = accounting("small", 1, 1);
  Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "nvme", 1.0)});
  plan.host_cache_subgroups = 1 << 20;
  const Rates r = rates_of(p, plan, 0);
  const double slower = r.adam_node_eps(1) / interpolate(r.adam_curve, 1);
  ASSERT_GT(slower, 4);
  auto expected = [&](std::int64_t sg) {  // each subgroup's work, the last one shorter
    const std::int64_t n = a.params_per_rank;
    const double work = static_cast<double>(n / sg) * r.adam_work(static_cast<double>(sg)) +
                        (n % sg > 0 ? r.adam_work(static_cast<double>(n % sg)) : 0.0);
    return work / r.adam_node_eps(1);
  };
  for (const std::int64_t chunks : {1, 16}) {
    plan.subgroup_elements = chunks * kIntegrityChunkElements;
    const double adam = analyze(a, p, plan, kUpdateOnly).adam_s;
    EXPECT_NEAR(adam / expected(plan.subgroup_elements), 1.0, 1e-9);
    EXPECT_NEAR(simulate(a, p, plan, kUpdateOnly).prediction.update_s / adam, 1.0, 0.05);
  }
  EXPECT_DOUBLE_EQ(r.adam_work(static_cast<double>(kIntegrityChunkElements)),
                   slower * static_cast<double>(kIntegrityChunkElements));
  EXPECT_DOUBLE_EQ(r.adam_work(16.0 * static_cast<double>(kIntegrityChunkElements)),
                   16.0 * static_cast<double>(kIntegrityChunkElements));
}

TEST(Models, OneCpuRanksResidentWeightsTakeEachSubgroupsCopyAfterItsAdam) {
  // Training one rank on the CPU backend with resident weights: after each subgroup's AdamW
  // its bf16 weights are copied into the model's on one thread, at host.memcpy_gbps_single.
  // Not with --param-offload, not for ZeRO-3 ranks (they gather), not in --update-only.
  Profile p = io_bound_profile();
  p.host.memcpy_gbps_single.median = 2;
  auto adam_s = [&](std::int64_t ranks, const SimulationOptions& o) {
    const Accounting a = accounting("small", 1, ranks);
    Plan plan = plan_for("small", a.params.total, 1, ranks, {plan_tier(p, "nvme", 1.0)});
    plan.host_cache_subgroups = 1 << 20;
    const AnalyticBreakdown an = analyze(a, p, plan, o);
    SimulationOptions alone = o;
    alone.update_only = true;
    const double copy = an.adam_s - analyze(a, p, plan, alone).adam_s;
    const double sim_copy =
        simulate(a, p, plan, o).prediction.update_s - simulate(a, p, plan, alone).prediction.update_s;
    EXPECT_NEAR(sim_copy, copy, 0.05 * copy + 1e-6);
    return std::pair{copy, static_cast<double>(a.params_per_rank) * 2 / 2e9};
  };
  const auto [copied, expected] = adam_s(1, {});
  EXPECT_NEAR(copied, expected, expected * 1e-9);
  EXPECT_EQ(adam_s(2, {}).first, 0);
  SimulationOptions offload;
  offload.param_offload = true;
  EXPECT_EQ(adam_s(1, offload).first, 0);
}

// A node whose disk (8 GB/s each way, reads and writes overlapping fully) and CPU Adam
// (2.2e9 elements/s) slow each other down while both run: the disk to x io, Adam to x ad.
Profile interfering_profile(double io, double ad) {
  Profile p = overlapping_profile(1.0, 1.0);
  p.host.adam_elements_per_s = {mlpo::testing::point(1, 2.2e8), mlpo::testing::point(16, 2.2e9)};
  TierProfile& nvme = p.tiers[1];
  for (auto* curve : {&nvme.read_gbps, &nvme.write_gbps, &nvme.mixed_read_gbps, &nvme.mixed_write_gbps})
    for (auto& pt : *curve) pt.value.median = pt.value.min = pt.value.max = 8;
  nvme.io_ratio_adam_busy = io;
  nvme.adam_ratio_io_busy = ad;
  return p;
}

TEST(Models, ATierAndAdamSlowEachOtherOnlyWhileBothRun) {
  // 1b on one rank: the disk needs D = 12 B x P / 8 GB/s = 1.65 s, Adam A = P / 2.2e9 = 0.5 s.
  // Together the disk runs at x0.5 and Adam at x0.8 while both run: Adam is busy A / 0.8, the
  // disk D + (A / 0.8) x 0.5 in all (docs/simulator.md) - between the idle figure, max(D, A),
  // and the bound of both slowed the whole update, D / 0.5.
  const Accounting a = accounting("1b", 1, 1);
  const double P = static_cast<double>(a.params_per_rank);
  const double D = 12 * P / 8e9, A = P / 2.2e9;  // (D: the disk moves whole extents, see below)
  const Profile idle = interfering_profile(1, 1), busy = interfering_profile(0.5, 0.8);
  const Plan plan = plan_for("1b", a.params.total, 1, 1, {plan_tier(busy, "nvme", 1.0)});
  const double shared = D * extent_elements(a, plan) / P + A / 0.8 * 0.5;
  const AnalyticBreakdown an = analyze(a, busy, plan, kUpdateOnly);
  // (Within 0.1 %: the last, shorter subgroup keeps fewer threads busy, core/adam_split.hpp.)
  EXPECT_NEAR(an.tiers[0].seconds / shared, 1.0, 2e-3);
  EXPECT_NEAR(an.adam_s / (A / 0.8), 1.0, 2e-3);
  const auto r = simulate_all(a, busy, {plan}, kUpdateOnly, 1).front();
  const auto r_idle = simulate_all(a, idle, {plan}, kUpdateOnly, 1).front();
  EXPECT_NEAR(r.prediction.tiers[0].busy_s / shared, 1.0, 0.05);
  EXPECT_NEAR(r.prediction.update_s / an.prediction.update_s, 1.0, 0.05);
  EXPECT_GT(r.prediction.update_s, 1.1 * r_idle.prediction.update_s);
  EXPECT_LT(r.prediction.update_s, 0.7 * D / 0.5);
  // All state in place: no tier streams, Adam runs at its idle rate.
  Plan in_place = plan_for("1b", a.params.total, 1, 1, {plan_tier(busy, "shm", 1.0)});
  EXPECT_NEAR(simulate(a, busy, in_place, kUpdateOnly).prediction.update_s / A, 1.0, 0.05);
}

TEST(Models, BothModelsPredictTheRanksAdamWTimeAsTheExecutorLogsIt) {
  // Prediction::adam_s, held against the run log's adam_s by --validate: the rank's AdamW
  // calls. With the disk streaming throughout (D > A), Adam runs slowed the whole update:
  // A / 0.8; all state in place, it is the whole update at the idle rate.
  const Accounting a = accounting("1b", 1, 1);
  const double A = static_cast<double>(a.params_per_rank) / 2.2e9;
  const Profile busy = interfering_profile(0.5, 0.8);
  const Plan streamed = plan_for("1b", a.params.total, 1, 1, {plan_tier(busy, "nvme", 1.0)});
  EXPECT_NEAR(analyze(a, busy, streamed, kUpdateOnly).prediction.adam_s / (A / 0.8), 1.0, 2e-3);
  EXPECT_NEAR(simulate(a, busy, streamed, kUpdateOnly).prediction.adam_s / (A / 0.8), 1.0, 0.05);
  const Plan in_place = plan_for("1b", a.params.total, 1, 1, {plan_tier(busy, "shm", 1.0)});
  for (const Prediction& p : {analyze(a, busy, in_place, kUpdateOnly).prediction,
                              simulate(a, busy, in_place, kUpdateOnly).prediction}) {
    EXPECT_NEAR(p.adam_s / A, 1.0, 0.05) << p.model;
    EXPECT_NEAR(p.adam_s / p.update_s, 1.0, 0.01) << p.model;
  }
}

TEST(Models, TheFlushAfterBackwardRunsAtTheTiersIdleRate) {
  // The baseline's fp32 gradient flush follows backward, when Adam does not run: the same
  // seconds whether or not the tier slows down under Adam; the update is slower.
  const Accounting a = accounting("1b", 1, 1);
  const Profile idle = interfering_profile(1, 1), busy = interfering_profile(0.5, 0.8);
  Plan plan = plan_for("1b", a.params.total, 1, 1, {plan_tier(busy, "nvme", 1.0)});
  plan.gradients = GradientPolicy::flush_fp32;
  const auto r = simulate_all(a, busy, {plan}, {}, 1).front();
  const auto r_idle = simulate_all(a, idle, {plan}, {}, 1).front();
  EXPECT_GT(r.prediction.backward_s, 0.0);
  EXPECT_NEAR(r.prediction.backward_s / r_idle.prediction.backward_s, 1.0, 1e-6);
  EXPECT_NEAR(analyze(a, busy, plan, {}).grad_flush_s / analyze(a, idle, plan, {}).grad_flush_s, 1.0, 1e-9);
  EXPECT_GT(r.prediction.update_s, 1.1 * r_idle.prediction.update_s);
}

TEST(Models, EachSlotHandoffIdlesTheTier) {
  // A slot limit of 1 on one rank: the reader and the writer take turns, and every transfer
  // takes the slot over from the other one (2 x 262 transfers of 4 Mi-element subgroups). The
  // profile's handoff, 1 ms, idles the tier before each; without a limit nothing waits.
  const Accounting a = accounting("1b", 1, 1);
  Profile p = interfering_profile(1, 1), handoff = p, waits = p;
  handoff.tiers[1].slot_handoff_us = 1000;
  const double subgroups = std::ceil(static_cast<double>(a.params_per_rank) / (1 << 22));
  const Plan limited = plan_for("1b", a.params.total, 1, 1, {plan_tier(p, "nvme", 1.0, 1)});
  const Plan unlimited = plan_for("1b", a.params.total, 1, 1, {plan_tier(p, "nvme", 1.0, 0)});
  const auto base = simulate_all(a, p, {limited, unlimited}, kUpdateOnly, 1);
  const auto with = simulate_all(a, handoff, {limited, unlimited}, kUpdateOnly, 1);
  const double expected = 2 * subgroups * 1e-3;
  EXPECT_NEAR((with[0].prediction.update_s - base[0].prediction.update_s) / expected, 1.0, 0.1);
  EXPECT_NEAR(with[1].prediction.update_s, base[1].prediction.update_s, 1e-9);
  const double analytic = analyze(a, handoff, limited, kUpdateOnly).prediction.update_s -
                          analyze(a, p, limited, kUpdateOnly).prediction.update_s;
  EXPECT_NEAR(analytic / expected, 1.0, 0.1);
  EXPECT_NEAR(analyze(a, handoff, unlimited, kUpdateOnly).prediction.update_s,
              analyze(a, p, unlimited, kUpdateOnly).prediction.update_s, 1e-9);
  // Where AdamW holds the cores until done, the write after each read waits for the Adam the
  // read started: one subgroup's, 4 Mi elements at 2.2e9/s, after each of the 262 reads.
  waits.tiers[1].slot_handoff_us = 100;  // measured with it: the wake-up that finds Adam running
  waits.tiers[1].slot_handoff_waits_adam = 1;
  const double adam_waits = subgroups * (1 << 22) / 2.2e9;
  const double simulated = simulate(a, waits, limited, kUpdateOnly).prediction.update_s;
  EXPECT_NEAR((simulated - base[0].prediction.update_s) / adam_waits, 1.0, 0.15);
  const double analyzed = analyze(a, waits, limited, kUpdateOnly).prediction.update_s -
                          analyze(a, p, limited, kUpdateOnly).prediction.update_s;
  EXPECT_NEAR(analyzed / adam_waits, 1.0, 0.15);
}

TEST(Models, TheGradientNormFollowsBackward) {
  // The profile's gradient-norm figure (1e9 elements/s on the node): backward grows by the
  // node's R x P elements over it in both models; update-only runs have no backward.
  const Accounting a = accounting("1b", 1, 2);
  Profile p = io_bound_profile(), norm = p;
  norm.host.grad_norm_elements_per_s = Measurement{1e9, 1e9, 1e9, 1, 0};
  const Plan plan = plan_for("1b", a.params.total, 1, 2, {plan_tier(p, "nvme", 1.0)});
  const double expected = 2.0 * static_cast<double>(a.params_per_rank) / 1e9;
  const auto sims = simulate_all(a, p, {plan}, {}, 1);
  const auto with = simulate_all(a, norm, {plan}, {}, 1);
  EXPECT_NEAR(with[0].prediction.backward_s - sims[0].prediction.backward_s, expected, 1e-6 * expected);
  EXPECT_NEAR(with[0].prediction.update_s, sims[0].prediction.update_s, 1e-6);
  const AnalyticBreakdown an = analyze(a, norm, plan, {});
  EXPECT_NEAR(an.grad_norm_s, expected, 1e-9);
  EXPECT_NEAR(an.prediction.backward_s - analyze(a, p, plan, {}).prediction.backward_s, expected, 1e-9);
  EXPECT_EQ(analyze(a, norm, plan, kUpdateOnly).grad_norm_s, 0);
}

TEST(SimGridModel, TimelineHasRankAndTierLanes) {
  const Profile p = io_bound_profile();
  const Accounting a = accounting("small", 1, 2);
  Plan plan = plan_for("small", a.params.total, 1, 2, {plan_tier(p, "nvme", 0.5), plan_tier(p, "pfs", 0.5)});
  plan.subgroup_elements = 1 << 16;
  SimulationOptions o = kUpdateOnly;
  o.timeline = true;
  const SimulationResult r = simulate(a, p, plan, o);
  std::set<std::string> lanes;
  for (const auto& e : r.timeline) {
    lanes.insert(e.lane);
    EXPECT_LE(e.start, e.end);
  }
  EXPECT_TRUE(lanes.count("rank 0") && lanes.count("rank 1") && lanes.count("tier nvme") &&
              lanes.count("tier pfs"));
}

TEST(Models, StreamedPlanTierMissingFromProfileIsAnErrorNamingIt) {
  const Profile p = io_bound_profile();
  const Accounting a = accounting("small", 1, 1);
  Plan plan = plan_for("small", a.params.total, 1, 1, {plan_tier(p, "nvme", 1.0)});
  plan.tiers[0].name = "lustre";
  try {
    simulate(a, p, plan, {});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'lustre' is not in the profile"), std::string::npos) << e.what();
  }
  EXPECT_THROW(analyze(a, p, plan, {}), Error);
}

}  // namespace
}  // namespace mlpo::sim
