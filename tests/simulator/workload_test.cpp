// Workload: placement interleaving, steady-state cache behaviour, resident subgroups on tiers
// updated in place and FLOP accounting — the per-rank schedule both models simulate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/subgroup_placement.hpp"
#include "simulator/internal/workload.hpp"
#include "tests/support/sample_inputs.hpp"

namespace mlpo::sim {
namespace {

using mlpo::testing::io_bound_profile;
using mlpo::testing::plan_for;
using mlpo::testing::plan_tier;

TEST(Placement, EightyTwentySpreadsTheMinorTierEvenly) {
  // Smooth weighted round robin (as nginx balances 4:1): A A B A A, repeated.
  const std::vector<int> p = subgroup_placement({0.8, 0.2}, 10);
  EXPECT_EQ(p, (std::vector<int>{0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
}

TEST(Placement, CountsFollowFractionsWithinOne) {
  const std::vector<double> f{0.5, 0.3, 0.2};
  const std::vector<int> p = subgroup_placement(f, 997);
  for (std::size_t t = 0; t < f.size(); ++t) {
    const auto n = std::count(p.begin(), p.end(), static_cast<int>(t));
    EXPECT_NEAR(static_cast<double>(n), f[t] * 997, 1.0) << "tier " << t;
  }
}

// The small model over `tiers` (names of io_bound_profile's tiers, equal shares) in 16 Ki-element
// subgroups: hundreds of them, so caches and placement have room to show.
Plan small_plan(const std::vector<std::string>& tiers, OrderPolicy order, std::int64_t cache,
                GradientPolicy gradients = GradientPolicy::delayed) {
  const Profile profile = io_bound_profile();
  std::vector<PlanTier> plan_tiers;
  for (const auto& name : tiers)
    plan_tiers.push_back(plan_tier(profile, name, 1.0 / static_cast<double>(tiers.size())));
  Plan p = plan_for("small", 0, 1, 1, plan_tiers);
  p.subgroup_elements = 1024 * 16;
  p.order = order;
  p.host_cache_subgroups = cache;
  p.gradients = gradients;
  return p;
}

Plan cache_plan(OrderPolicy order, std::int64_t cache) { return small_plan({"nvme"}, order, cache); }

TEST(Workload, AscendingOrderNeverHitsAPartialCache) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  const Workload w = make_workload(a, cache_plan(OrderPolicy::ascending, 1000));
  ASSERT_GT(w.layout.count(), 1000);
  EXPECT_EQ(w.cache_hits, 0);
}

TEST(Workload, CacheHitsMatchClosedFormForBothOrders) {
  // Alternating: the previous iteration ended on the subgroups this one starts with, so the
  // first min(C, n) hit. Ascending: the cache holds the tail, and every miss at the head evicts
  // the oldest of it just before Adam would reach it, so nothing hits unless all fit.
  const Accounting a = account(find_preset("small"), ClusterShape{});
  for (OrderPolicy order : {OrderPolicy::alternating, OrderPolicy::ascending}) {
    for (std::int64_t cache : {0, 1, 7, 60, 100, 1000}) {
      const Plan plan = cache_plan(order, cache);
      const Workload w = make_workload(a, plan);
      const std::int64_t n = w.layout.count();
      const std::int64_t expected = cache >= n ? n : order == OrderPolicy::alternating ? cache : 0;
      EXPECT_EQ(w.cache_hits, expected) << to_string(order) << " cache " << cache << " of " << n;
    }
  }
}

TEST(Workload, AlternatingOrderHitsTheFirstCachedSubgroupsAndSkipsTheirWrites) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  const Workload w = make_workload(a, cache_plan(OrderPolicy::alternating, 5));
  ASSERT_GT(w.layout.count(), 20);
  std::int64_t writes = 0, misses = 0;
  for (std::size_t i = 0; i < w.steps.size(); ++i) {
    EXPECT_EQ(w.steps[i].hit, i < 5) << "step " << i;
    writes += w.steps[i].write_subgroup >= 0;
    misses += !w.steps[i].hit;
  }
  EXPECT_EQ(writes, misses);  // steady state: a hit saves its read and its write
}

TEST(Workload, WithoutCacheEverySubgroupIsReadAndWrittenOnce) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  const Workload w = make_workload(a, cache_plan(OrderPolicy::alternating, 0));
  std::int64_t elements = 0;
  for (const auto& s : w.steps) {
    EXPECT_FALSE(s.hit);
    EXPECT_EQ(s.write_subgroup, s.subgroup);
    elements += s.elements;
  }
  EXPECT_EQ(elements, a.params_per_rank);
}

// Half the subgroups on /dev/shm (kind host, updated in place), half on NVMe.
Plan shm_and_nvme_plan(std::int64_t cache, GradientPolicy gradients = GradientPolicy::delayed) {
  return small_plan({"shm", "nvme"}, OrderPolicy::alternating, cache, gradients);
}

TEST(Workload, SubgroupsOnAHostTierAreResidentNeverReadWrittenOrCached) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  for (std::int64_t cache : {0, 5, 1000000}) {
    const Workload w = make_workload(a, shm_and_nvme_plan(cache));
    ASSERT_GT(w.layout.count(), 20);
    std::int64_t streamed = 0, misses = 0, writes = 0;
    double nvme_missed = 0;
    for (const UpdateStep& s : w.steps) {
      const bool on_shm = s.tier == 0;
      EXPECT_EQ(s.resident, on_shm) << "subgroup " << s.subgroup;
      if (on_shm) {
        EXPECT_FALSE(s.hit) << "subgroup " << s.subgroup;
        EXPECT_EQ(s.write_subgroup, -1) << "subgroup " << s.subgroup << " cache " << cache;  // not "itself"
      }
      if (s.write_subgroup >= 0) {
        EXPECT_EQ(s.write_tier, 1) << "subgroup " << s.subgroup;
      }
      streamed += !on_shm;
      misses += !on_shm && !s.hit;
      writes += s.write_subgroup >= 0;
      if (!on_shm && !s.hit) nvme_missed += static_cast<double>(s.elements);
    }
    // Hits come from the NVMe subgroups alone: the first min(C, streamed) of the order.
    EXPECT_EQ(w.cache_hits, std::min(cache, streamed)) << "cache " << cache;
    EXPECT_EQ(writes, misses) << "cache " << cache;
    EXPECT_EQ(w.read_elements[0], 0);
    EXPECT_EQ(w.write_elements[0], 0);
    EXPECT_EQ(w.read_elements[1], nvme_missed);
    EXPECT_TRUE(w.in_place[0]);
    EXPECT_FALSE(w.in_place[1]);
  }
}

TEST(Workload, Fp32GradientsOfResidentSubgroupsAreNotFlushed) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  const Workload w = make_workload(a, shm_and_nvme_plan(0, GradientPolicy::flush_fp32));
  double nvme = 0;
  for (const UpdateStep& s : w.steps)
    if (s.tier == 1) nvme += static_cast<double>(s.elements);
  EXPECT_EQ(w.flush_elements[0], 0);
  EXPECT_EQ(w.flush_elements[1], nvme);
}

TEST(Workload, LayerFlopsSumToAccountingHardwareFlops) {
  for (const char* model : {"small", "llama2-7b", "mlpo-280b"}) {
    const ClusterShape shape{2, 4, 2, 0, 3};
    const Accounting a = account(find_preset(model), shape);
    Plan plan = cache_plan(OrderPolicy::alternating, 0);
    plan.subgroup_elements = std::int64_t{1} << 26;
    const Workload w = make_workload(a, plan);
    const double tokens = static_cast<double>(a.shape.micro_batch * a.shape.seq_len * a.shape.grad_accum);
    EXPECT_NEAR((w.forward_flops() + w.backward_flops()) / (a.hardware_flops_per_token * tokens), 1.0, 1e-9)
        << model;
    EXPECT_NEAR(w.backward_flops() / w.forward_flops(), 3.0, 1e-9) << model;
  }
}

TEST(Workload, BaselineRereadsFp32GradientsInTheUpdate) {
  const Accounting a = account(find_preset("small"), ClusterShape{});
  const Profile profile = io_bound_profile();
  const Plan plan =
      mlpo::testing::baseline_of(cache_plan(OrderPolicy::alternating, 0), plan_tier(profile, "nvme", 1.0));
  const Workload w = make_workload(a, plan);
  EXPECT_EQ(w.read_bytes_per_element, 16);
  EXPECT_EQ(w.write_bytes_per_element, 12);
  EXPECT_EQ(w.grad_flush_bytes_per_element, 4);
}

}  // namespace
}  // namespace mlpo::sim
