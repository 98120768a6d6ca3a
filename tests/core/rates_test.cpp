// Rates: the one path from a profile to the models' rates. The node's Adam throughput is one
// formula whoever asks — the models (fractional threads per rank), the tuner's in-place tier
// and the executor's bound (its whole threads).
#include "core/rates.hpp"

#include <gtest/gtest.h>

#include "core/accounting.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"

namespace mlpo {
namespace {

// Adam elements/s by threads: 1e8 per thread up to 4 threads, then flat.
HostProfile host(std::int64_t cores) {
  HostProfile h;
  h.cores = cores;
  for (auto [threads, eps] : std::vector<std::pair<std::int64_t, double>>{{1, 1e8}, {4, 4e8}, {8, 4e8}})
    h.adam_elements_per_s.push_back(CurvePoint{threads, Measurement{eps, eps, eps, 1, 0}});
  return h;
}

TEST(Rates, AStreamedTierIsModelledWithTheCurvesOfThePlansIoSetting) {
  Profile p;
  p.host = host(8);
  TierProfile t;
  t.name = "nvme";
  t.kind = TierKind::nvme;
  t.path = "/tmp/nvme";
  t.read_gbps = {CurvePoint{1, Measurement{2, 2, 2, 1, 0}}};
  t.write_gbps = {CurvePoint{1, Measurement{1, 1, 1, 1, 0}}};
  TierIoSetting big;
  big.block_size = 4 << 20;
  big.queue_depth = 4;
  big.read_gbps = {CurvePoint{1, Measurement{3, 3, 3, 1, 0}}};
  big.write_gbps = {CurvePoint{1, Measurement{1.5, 1.5, 1.5, 1, 0}}};
  t.io_settings.push_back(big);
  p.tiers.push_back(t);
  Plan plan;
  plan.cluster = ClusterShape{1, 1, 1, 0, 1};
  PlanTier pt;
  pt.name = "nvme";
  pt.kind = TierKind::nvme;
  pt.path = "/tmp/nvme";
  pt.fraction = 1;
  plan.tiers.push_back(pt);
  const auto has_warning = [](const Rates& r, const std::string& text) {
    for (const auto& w : r.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };

  const Rates main = rates_of(p, plan, 0);  // 1 MiB x 8: the main curves
  EXPECT_DOUBLE_EQ(main.tiers[0].read_bps(1), 2e9);
  EXPECT_FALSE(has_warning(main, "I/O setting"));
  plan.io_block_size = 4 << 20;
  plan.io_queue_depth = 4;
  const Rates measured = rates_of(p, plan, 0);
  EXPECT_DOUBLE_EQ(measured.tiers[0].read_bps(1), 3e9);
  EXPECT_DOUBLE_EQ(measured.tiers[0].write_bps(1), 1.5e9);
  EXPECT_FALSE(has_warning(measured, "I/O setting"));
  // A setting the profile did not measure: the main curves, and a warning saying how to measure it.
  plan.io_queue_depth = 16;
  const Rates unmeasured = rates_of(p, plan, 0);
  EXPECT_DOUBLE_EQ(unmeasured.tiers[0].read_bps(1), 2e9);
  EXPECT_TRUE(has_warning(unmeasured, "mlpo-profile --io-settings 4096KiB:16"));
}

TEST(Rates, NodeAdamIsTheCurveAtTheThreadsInUseCappedAtTheCores) {
  const HostProfile h = host(8);
  EXPECT_DOUBLE_EQ(node_adam_elements_per_s(h.adam_elements_per_s, 8, 1, 2), 2e8);
  EXPECT_DOUBLE_EQ(node_adam_elements_per_s(h.adam_elements_per_s, 8, 3, 1), 3e8);
  // 4 ranks of 3 threads want 12 threads: the node has 2 cores.
  EXPECT_DOUBLE_EQ(node_adam_elements_per_s(h.adam_elements_per_s, 2, 4, 3), 2e8);
}

TEST(Rates, ModelsShareTheCoresEvenlyOverTheRanks) {
  EXPECT_DOUBLE_EQ(adam_threads_per_rank(8, 3), 8.0 / 3.0);
  EXPECT_DOUBLE_EQ(adam_threads_per_rank(2, 4), 1.0);  // at least one thread
  Rates r;
  r.ranks_per_node = 4;
  r.cores = 2;
  r.adam_curve = host(2).adam_elements_per_s;
  // One rank alone on its single thread; all four on the two cores.
  EXPECT_DOUBLE_EQ(r.adam_node_eps(1), 1e8);
  EXPECT_DOUBLE_EQ(r.adam_node_eps(4), 2e8);
}

TEST(Rates, InPlaceTierDeliversTheNodesAdamRateInStateBytesBothWays) {
  const HostProfile h = host(4);
  Rates r;
  r.ranks_per_node = 2;
  r.cores = h.cores;
  r.adam_curve = h.adam_elements_per_s;
  EXPECT_DOUBLE_EQ(in_place_update_bps(h, 2), r.adam_node_eps(2) * 2 * kOptimizerStateBytes);
  EXPECT_DOUBLE_EQ(in_place_update_bps(h, 2), 4e8 * 24);
}

TEST(Rates, IntegrityChecksSlowAdamBy24BytesOfCrcPerElementOnItsThreads) {
  // AdamW's pass verifies p, m, v before and records them after (docs/io.md): 24 B of CRC32C
  // per element on the same threads, at the profile's cached one-thread rate times the threads.
  Profile p;
  p.host = host(8);
  p.host.crc32c_gbps = Measurement{2.4, 2.4, 2.4, 1, 0};  // 1e8 elements/s of CRC per thread
  Plan plan;
  plan.cluster = ClusterShape{1, 1, 1, 0, 1};
  const Rates on = rates_of(p, plan, 0);
  for (std::size_t i = 0; i < on.adam_curve.size(); ++i) {
    const CurvePoint& pt = p.host.adam_elements_per_s[i];
    const double crc = 1e8 * static_cast<double>(pt.streams);
    EXPECT_DOUBLE_EQ(on.adam_curve[i].value.median, 1 / (1 / pt.value.median + 1 / crc));
  }
  EXPECT_DOUBLE_EQ(on.adam_curve[0].value.median, 0.5e8);  // one thread: as long again
  plan.crc = false;
  EXPECT_DOUBLE_EQ(rates_of(p, plan, 0).adam_curve[1].value.median, 4e8);
  plan.crc = true;
  p.host.crc32c_gbps = {};  // an older profile: the check's cost is not known, not guessed
  EXPECT_DOUBLE_EQ(rates_of(p, plan, 0).adam_curve[1].value.median, 4e8);
  // A profile that timed the pipeline's own checked AdamW: that curve, as measured.
  p.host.crc32c_gbps = Measurement{2.4, 2.4, 2.4, 1, 0};
  p.host.adam_checked_elements_per_s = {CurvePoint{1, Measurement{0.7e8, 0.7e8, 0.7e8, 1, 0}},
                                        CurvePoint{8, Measurement{2e8, 2e8, 2e8, 1, 0}}};
  EXPECT_DOUBLE_EQ(rates_of(p, plan, 0).adam_curve[1].value.median, 2e8);
  plan.crc = false;
  EXPECT_DOUBLE_EQ(rates_of(p, plan, 0).adam_curve[1].value.median, 4e8);
}

TEST(Rates, ASubgroupOfFewerGrainsThanThreadsKeepsFewerBusy) {
  // 4 cores, one rank: 4 threads. With CRC on a subgroup splits by 16 Ki-element chunks
  // (core/adam_split.hpp): one of 16 Ki runs on one thread at 1e8/s instead of 4 at 4e8/s.
  Profile p;
  p.host = host(4);
  Plan plan;
  plan.cluster = ClusterShape{1, 1, 1, 0, 1};
  const Rates on = rates_of(p, plan, 0);
  EXPECT_EQ(on.adam_grain, kIntegrityChunkElements);
  const double chunk = static_cast<double>(kIntegrityChunkElements);
  EXPECT_DOUBLE_EQ(on.adam_work(chunk), 4 * chunk);
  EXPECT_DOUBLE_EQ(on.adam_work(2 * chunk), 2 * 2 * chunk);
  // 3 chunks (the last one short), one per thread: as long as one chunk on one thread.
  EXPECT_DOUBLE_EQ(on.adam_work(3 * chunk - 1), 4 * chunk);
  // 5 chunks on 4 threads: one thread takes two.
  EXPECT_DOUBLE_EQ(on.adam_work(5 * chunk), 4 * 2 * chunk);
  EXPECT_DOUBLE_EQ(on.adam_work(64 * chunk), 64 * chunk);
  // Without CRC the split is the AdamW grain: 4 grains keep the 4 threads busy, one keeps one.
  plan.crc = false;
  const Rates off = rates_of(p, plan, 0);
  const double grain = static_cast<double>(kAdamWGrainElements);
  EXPECT_EQ(off.adam_grain, kAdamWGrainElements);
  EXPECT_DOUBLE_EQ(off.adam_work(4 * grain), 4 * grain);
  EXPECT_DOUBLE_EQ(off.adam_work(grain), 4 * grain);
  // Four ranks on the 4 cores: one thread each, nothing to lose.
  plan.crc = true;
  plan.cluster = ClusterShape{1, 4, 1, 0, 1};
  EXPECT_DOUBLE_EQ(rates_of(p, plan, 0).adam_work(chunk), chunk);
}

TEST(Rates, ASubgroupOnSeveralThreadsWaitsForThePoolsWakeUp) {
  // 4 cores, one rank: a subgroup of more than one grain wakes the other threads and waits for
  // them (host.pool_dispatch_s) unless the caller's own range is longer by more than the
  // wake-up; one grain runs on the calling thread alone; a profile without the figure adds
  // nothing; 4 ranks of one thread each never wake a pool.
  Profile p;
  p.host = host(4);
  Plan plan;
  plan.cluster = ClusterShape{1, 1, 1, 0, 1};
  const double chunk = static_cast<double>(kIntegrityChunkElements);
  EXPECT_EQ(rates_of(p, plan, 0).adam_call_s(8 * chunk), 0);
  p.host.pool_dispatch_s = Measurement{2e-5, 2e-5, 2e-5, 1, 0};
  const Rates r = rates_of(p, plan, 0);
  EXPECT_DOUBLE_EQ(r.adam_call_s(8 * chunk), 2e-5);  // 2 chunks per thread: every range alike
  // A chunk and one element: the caller's chunk (at 1e8/s on one thread, 0.16 ms) hides the
  // wake-up of the thread that takes the one element.
  EXPECT_EQ(r.adam_call_s(chunk + 1), 0);
  EXPECT_DOUBLE_EQ(r.adam_call_s(2 * chunk + 1), 2e-5);  // the caller and one worker a chunk each
  EXPECT_EQ(r.adam_call_s(chunk), 0);
  // A caller's range longer than the others' by less than the wake-up: the difference is left.
  p.host.pool_dispatch_s = Measurement{1e-3, 1e-3, 1e-3, 1, 0};
  const Rates slow = rates_of(p, plan, 0);
  const double shorter = chunk / 4;  // the worker's range is a quarter chunk short of the caller's
  const double caller_s = slow.adam_work(2 * chunk - shorter) / slow.adam_node_eps(1);
  EXPECT_NEAR(slow.adam_call_s(2 * chunk - shorter), 1e-3 - caller_s * shorter / chunk, 1e-12);
  plan.cluster = ClusterShape{1, 4, 1, 0, 1};
  EXPECT_EQ(rates_of(p, plan, 0).adam_call_s(8 * chunk), 0);
}

TEST(Rates, EachRankOfSeveralGetsItsThreadsWorthOfTheCpuModel) {
  // A 4-core host: 100 GFLOP/s for a layer's forward on all cores, 40 on one thread.
  HostProfile h;
  h.cores = 4;
  auto figures = [](double gflops) {
    ModelComputeFigures m;
    m.model = "tiny";
    m.micro_batch = 1;
    m.seq_len = 128;
    m.layer_forward_gflops = m.layer_backward_gflops = Measurement{gflops, gflops, gflops, 1, 0};
    m.head_forward_gflops = m.head_backward_gflops = Measurement{gflops, gflops, gflops, 1, 0};
    return m;
  };
  h.cpu_model = figures(100);
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 1).layer_forward, 100e9);
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 2).layer_forward, 50e9);  // no one-thread figure: shared
  h.cpu_model_one_thread = figures(40);
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 1).layer_forward, 100e9);
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 4).layer_forward, 40e9);  // a core each
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 2).layer_forward, 60e9);  // 2 threads each: 40 + 60 x 1/3
  EXPECT_DOUBLE_EQ(cpu_model_rates(h, 8).head_backward, 20e9);  // half a core each
  EXPECT_TRUE(cpu_model_rates(h, 8).last_layer_skips_recompute);
}

TEST(Rates, AStreamedTierCarriesItsMeasuredInterferenceWithAdam) {
  // The profile measured the tier with AdamW on every core (0.5x its idle bytes/s) and AdamW
  // while the tier streamed (0.8x): the rates keep both curves idle and carry the ratios for
  // the models to apply while both run; a tier updated in place carries none.
  Profile p;
  p.host = host(8);
  TierProfile t;
  t.name = "disk";
  t.read_gbps = t.write_gbps = {CurvePoint{1, Measurement{2, 2, 2, 1, 0}}};
  t.io_ratio_adam_busy = 0.5;
  t.adam_ratio_io_busy = 0.8;
  t.slot_handoff_us = 100;
  t.slot_handoff_waits_adam = 0.5;
  p.tiers = {t};
  Plan plan;
  plan.cluster = ClusterShape{1, 1, 1, 0, 1};
  plan.crc = false;
  plan.tiers = {PlanTier{"disk", "/d", TierKind::nvme, 1.0, 0}};
  const Rates used = rates_of(p, plan, 0);
  EXPECT_DOUBLE_EQ(used.tiers[0].read_bps(1), 2e9);
  EXPECT_DOUBLE_EQ(used.adam_curve[1].value.median, 4e8);
  EXPECT_DOUBLE_EQ(used.tiers[0].io_ratio_adam_busy, 0.5);
  EXPECT_DOUBLE_EQ(used.tiers[0].adam_ratio_io_busy, 0.8);
  EXPECT_DOUBLE_EQ(used.tiers[0].slot_handoff_s, 1e-4);
  EXPECT_DOUBLE_EQ(used.tiers[0].slot_handoff_waits_adam, 0.5);
  plan.tiers = {PlanTier{"disk", "/d", TierKind::host, 1.0, 0}};  // the same path mapped in place
  const Rates in_place = rates_of(p, plan, 0);
  EXPECT_DOUBLE_EQ(in_place.tiers[0].io_ratio_adam_busy, 1);
  EXPECT_DOUBLE_EQ(in_place.tiers[0].adam_ratio_io_busy, 1);
  t.io_ratio_adam_busy = t.adam_ratio_io_busy = 0;  // an older profile: no interference known
  EXPECT_DOUBLE_EQ(tier_rates_of(t).io_ratio_adam_busy, 1);
  EXPECT_DOUBLE_EQ(tier_rates_of(t).adam_ratio_io_busy, 1);
}

}  // namespace
}  // namespace mlpo
