// ZeRO-3 collectives in the models (simulator/internal/exchange_schedule.hpp): the per-layer
// all-gathers and reduce-scatters of several ranks, overlapped one layer ahead as the
// executor's LayerExchange runs them.
#include <gtest/gtest.h>

#include "core/model_spec.hpp"
#include "simulator/analytic_model.hpp"
#include "simulator/internal/exchange_schedule.hpp"
#include "simulator/iteration_model.hpp"
#include "simulator/internal/simulation_rates.hpp"
#include "tests/support/mentions.hpp"
#include "tests/support/sample_inputs.hpp"

namespace mlpo::sim {
namespace {

using mlpo::testing::io_bound_profile;
using mlpo::testing::plan_for;
using mlpo::testing::plan_tier;

Accounting accounting(const char* model, std::int64_t nodes, std::int64_t ranks, std::int64_t accum = 1) {
  return account(find_preset(model), ClusterShape{nodes, ranks, 1, 0, accum});
}

// A GPU node whose host MPI moves `gbps` (bus) in both collectives, 50 us each.
Profile profile_with_collectives(double gbps) {
  Profile p = io_bound_profile();
  p.gpus.push_back(mlpo::testing::gpu(8));
  return mlpo::testing::with_host_mpi(p, gbps);
}

Plan shm_plan(const Profile& p, const Accounting& a) {
  Plan plan = plan_for(a.spec.name, a.params.total, a.shape.nodes, a.shape.ranks_per_node,
                       {plan_tier(p, "shm", 1.0)});
  plan.cluster.grad_accum = a.shape.grad_accum;
  return plan;
}

TEST(ExchangeSchedule, ComputeBoundPassExposesOnlyTheFirstGather) {
  // Three parts of 1 s compute, gathers of 0.25 s: only the first one is waited for.
  std::vector<PassPart> parts(3, PassPart{nullptr, 1.0, 0.25, -1});
  EXPECT_DOUBLE_EQ(pass_seconds(parts), 3.25);
  // Communication-bound: gathers of 2 s back to back, then the last part's compute.
  for (auto& p : parts) p.gather_s = 2;
  EXPECT_DOUBLE_EQ(pass_seconds(parts), 7.0);
  // Reduce-scatters of 3 s: a hand-over waits for the one two before, the end for all.
  for (auto& p : parts) p = PassPart{nullptr, 1.0, -1, 3.0};
  EXPECT_DOUBLE_EQ(pass_seconds(parts), 1 + 9);
}

TEST(Collectives, AddTimeOnlyForSeveralRanks) {
  const Profile with = profile_with_collectives(10);
  Profile without = with;
  without.comm = {};
  const Accounting one = accounting("1b", 1, 1);
  const AnalyticBreakdown a1 = analyze(one, with, shm_plan(with, one), {});
  const AnalyticBreakdown a1_none = analyze(one, without, shm_plan(without, one), {});
  EXPECT_EQ(a1.prediction.forward_s, a1_none.prediction.forward_s);
  EXPECT_EQ(a1.prediction.backward_s, a1_none.prediction.backward_s);
  EXPECT_EQ(a1.forward_exchange_s, 0);
  EXPECT_EQ(simulate(one, with, shm_plan(with, one), {}).prediction.backward_s,
            simulate(one, without, shm_plan(without, one), {}).prediction.backward_s);

  const Accounting four = accounting("1b", 1, 4);
  const AnalyticBreakdown a4 = analyze(four, with, shm_plan(with, four), {});
  EXPECT_GT(a4.forward_exchange_s, 0);
  EXPECT_GT(a4.backward_exchange_s, 0);
  EXPECT_GT(a4.prediction.forward_s, a4.forward_compute_s);
  EXPECT_GT(a4.prediction.backward_s, a4.backward_compute_s);
  const SimulationResult s4 = simulate(four, with, shm_plan(with, four), {});
  EXPECT_GT(s4.prediction.forward_s, a4.forward_compute_s * 1.01);
}

TEST(Collectives, MoreBandwidthNeverTakesLonger) {
  const Accounting a = accounting("1b", 1, 4, 2);
  double last_fwd = 1e30, last_bwd = 1e30, last_sim = 1e30;
  for (double gbps : {1.0, 4.0, 16.0, 64.0}) {
    const Profile p = profile_with_collectives(gbps);
    const AnalyticBreakdown an = analyze(a, p, shm_plan(p, a), {});
    EXPECT_LE(an.prediction.forward_s, last_fwd) << gbps << " GB/s";
    EXPECT_LE(an.prediction.backward_s, last_bwd) << gbps << " GB/s";
    const double sim = simulate(a, p, shm_plan(p, a), {}).prediction.backward_s;
    EXPECT_LE(sim, last_sim) << gbps << " GB/s";
    last_fwd = an.prediction.forward_s;
    last_bwd = an.prediction.backward_s;
    last_sim = sim;
  }
  EXPECT_LT(last_fwd, analyze(a, profile_with_collectives(1), shm_plan(profile_with_collectives(1), a), {})
                          .prediction.forward_s);
}

TEST(Collectives, AnalyticAndSimGridAgreeWithinTwoPercentOnSeveralRanks) {
  // Communication-bound (1 GB/s), balanced (20 GB/s) and compute-bound (400 GB/s) exchanges,
  // 4 ranks, two micro-steps (gathers on both, reduce-scatters on the last).
  const Accounting a = accounting("1b", 1, 4, 2);
  for (double gbps : {1.0, 20.0, 400.0}) {
    const Profile p = profile_with_collectives(gbps);
    const Plan plan = shm_plan(p, a);
    const AnalyticBreakdown an = analyze(a, p, plan, {});
    const SimulationResult sim = simulate(a, p, plan, {});
    EXPECT_NEAR(an.prediction.forward_s / sim.prediction.forward_s, 1.0, 0.02) << gbps << " GB/s";
    EXPECT_NEAR(an.prediction.backward_s / sim.prediction.backward_s, 1.0, 0.02) << gbps << " GB/s";
  }
}

// The CPU backend (no GPU) with its measured figures (20 GFLOP/s for every part and pass on
// each of R ranks), host MPI at `gbps` in both collectives, 50 us each.
Profile cpu_profile_with_collectives(double gbps) {
  return mlpo::testing::with_host_mpi(mlpo::testing::cpu_model_profile(), gbps);
}

TEST(Collectives, OnTheCpuBackendTheirBytesTakeTheComputeCores) {
  // MPI's shared-memory copies and the reduce-scatter's sums run on the cores that compute:
  // with collectives far shorter than compute, forward is its compute plus every gather's
  // bytes plus the first gather's latency (on a GPU: compute plus the first gather alone).
  const Accounting a = account(find_preset("small"), ClusterShape{1, 2, 1, 64, 1});
  const Profile p = cpu_profile_with_collectives(2);
  const Plan plan = shm_plan(p, a);
  const AnalyticBreakdown an = analyze(a, p, plan, {});
  const Rates r = simulation_rates(p, plan, {}, a);
  const Workload w = make_workload(a, plan);
  const CollectiveCost cost = collective_cost_of(r, w);
  ASSERT_TRUE(cost.on_compute_cores);
  double gathers = 0, first = -1;
  for (const PassPart& part : forward_parts(w, r.compute, cost)) {
    gathers += cost.core_seconds(part.gather_s);
    if (first < 0) first = part.gather_s;
  }
  ASSERT_GT(gathers, 0.02 * an.forward_compute_s);  // large enough to see
  EXPECT_NEAR(an.prediction.forward_s, an.forward_compute_s + gathers + cost.latency_s, 1e-9);
  // What --validate holds against the run log: the core seconds of every collective of the
  // iteration (the exchange thread's CPU) and what the schedule alone waits for them.
  const std::vector<PassPart> backward = backward_parts(w, r.compute, cost, true);
  double core = gathers, waited = pass_seconds(forward_parts(w, r.compute, cost)) + pass_seconds(backward);
  for (const PassPart& part : backward)
    core += cost.core_seconds(std::max(0.0, part.gather_s)) +
            cost.core_seconds(std::max(0.0, part.reduce_scatter_s));
  for (const PassPart& part : forward_parts(w, r.compute, cost)) waited -= part.compute_s;
  for (const PassPart& part : backward) waited -= part.compute_s;
  EXPECT_NEAR(an.exchange_core_s, core, 1e-12);
  EXPECT_NEAR(an.collective_wait_s, waited, 1e-12);
  EXPECT_GE(an.collective_wait_s, first);      // the first gather, at least
  EXPECT_LT(first, an.forward_compute_s / 8);  // compute-bound: on a GPU only `first` would show
  // SimGrid runs the bytes as work on the rank's compute host: the same sum within 2 %, from
  // communication- to compute-bound.
  for (double gbps : {1.0, 20.0, 400.0}) {
    const Profile q = cpu_profile_with_collectives(gbps);
    const AnalyticBreakdown qa = analyze(a, q, plan, {});
    const SimulationResult sim = simulate(a, q, plan, {});
    EXPECT_NEAR(qa.prediction.forward_s / sim.prediction.forward_s, 1.0, 0.02) << gbps << " GB/s";
    EXPECT_NEAR(qa.prediction.backward_s / sim.prediction.backward_s, 1.0, 0.02) << gbps << " GB/s";
  }
}

TEST(Collectives, ProfileWithoutFiguresWarnsAndModelsNone) {
  Profile p = profile_with_collectives(10);
  p.comm = {};
  const Accounting a = accounting("1b", 1, 4);
  const AnalyticBreakdown an = analyze(a, p, shm_plan(p, a), {});
  EXPECT_TRUE(mlpo::testing::mentions(an.warnings, "no comm.host_mpi figures"))
      << ::testing::PrintToString(an.warnings);
  EXPECT_EQ(an.forward_exchange_s, 0);
  EXPECT_EQ(an.prediction.forward_s, an.forward_compute_s);
  // One rank needs no figures: no warning.
  const Accounting one = accounting("1b", 1, 1);
  EXPECT_FALSE(mlpo::testing::mentions(analyze(one, p, shm_plan(p, one), {}).warnings, "comm."));
  // Several nodes without inter-node figures: modelled at the node's rate, with a warning.
  const Profile node = profile_with_collectives(10);
  const Accounting two_nodes = accounting("1b", 2, 4);
  const AnalyticBreakdown an2 = analyze(two_nodes, node, shm_plan(node, two_nodes), {});
  EXPECT_TRUE(mlpo::testing::mentions(an2.warnings, "no comm.inter_node figures"));
  EXPECT_GT(an2.forward_exchange_s, 0);
  Profile slow_network = node;
  slow_network.comm.inter_node = node.comm.host_mpi;
  slow_network.comm.inter_node.all_gather_gbps.median = 1;
  slow_network.comm.inter_node.reduce_scatter_gbps.median = 1;
  EXPECT_GT(analyze(two_nodes, slow_network, shm_plan(slow_network, two_nodes), {}).prediction.forward_s,
            an2.prediction.forward_s);
}

TEST(Collectives, GatheredWeightsAndFullGradientsCrossPcieInSeries) {
  // Collectives far faster than compute: forward is compute + the first gather + every part's
  // bf16 weights to the GPU (2 B x all parameters at 25 GB/s), in both models.
  const Profile p = profile_with_collectives(1e6);
  const Accounting a = accounting("1b", 1, 4);
  const AnalyticBreakdown an = analyze(a, p, shm_plan(p, a), {});
  const double to_device = 2.0 * static_cast<double>(a.params.total) / 25e9;
  EXPECT_NEAR(an.prediction.forward_s - an.forward_compute_s, to_device, 0.02 * to_device);
  EXPECT_EQ(an.grad_d2h_s, 0);  // the full fp32 gradients' copies are in the backward schedule
  // Backward: weights of every part but the embedding to the GPU, every part's gradients back.
  const double to_host = 4.0 * static_cast<double>(a.params.total) / 25e9;
  const double embedding = 2.0 * static_cast<double>(a.params.embedding) / 25e9;
  const double backward = to_device - embedding + to_host;
  EXPECT_NEAR(an.prediction.backward_s - an.backward_compute_s, backward, 0.02 * backward);
  EXPECT_NEAR(simulate(a, p, shm_plan(p, a), {}).prediction.forward_s / an.prediction.forward_s, 1.0, 0.02);
}

TEST(Collectives, NcclFiguresAreKeptButNotUsedAndSaySo) {
  const Profile mpi = profile_with_collectives(10);
  Profile both = mpi;
  both.comm.nccl = mpi.comm.host_mpi;
  both.comm.nccl.all_gather_gbps.median = both.comm.nccl.reduce_scatter_gbps.median = 400;
  const Accounting a = accounting("1b", 1, 4);
  const AnalyticBreakdown an = analyze(a, both, shm_plan(both, a), {});
  EXPECT_TRUE(mlpo::testing::mentions(an.warnings, "comm.nccl figures are not used"));
  EXPECT_EQ(an.prediction.forward_s, analyze(a, mpi, shm_plan(mpi, a), {}).prediction.forward_s);
}

}  // namespace
}  // namespace mlpo::sim
