// The analytic search without enumeration: on small cases it finds the exhaustive search's
// best plan, its finer search only ever improves on the grid, and on the big case
// (8 tiers, 8 ranks per node) it scores a tiny part of the space.
#include <gtest/gtest.h>

#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/candidate_search.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {
namespace {

using mlpo::testing::point;
using mlpo::testing::tier;

TuneRequest request_for(const Profile& profile, std::int64_t ranks, std::int64_t budget_gib) {
  TuneRequest r;
  r.model = find_preset("1b");
  r.shape = ClusterShape{1, ranks, 1, 0, 1};
  r.profile = profile;
  // No GPU in the profile: the CPU backend's model comes on top of the budget's room.
  r.host_memory_budget =
      (budget_gib << 30) + static_cast<std::int64_t>(cpu_model_bytes(account(r.model, r.shape), r));
  return r;
}

// Small profiles whose best plans differ: flat curves, a device that loses throughput under
// concurrency (a limit pays), measured mixed curves, a small NVMe (capacity caps its share).
std::vector<TuneRequest> small_cases() {
  std::vector<TuneRequest> out;
  out.push_back(request_for(mlpo::testing::io_bound_profile(), 2, 6));
  out.push_back(request_for(mlpo::testing::io_bound_profile(), 2, 40));
  Profile falling = mlpo::testing::io_bound_profile();
  falling.tiers[1].read_gbps = {point(1, 2.0), point(2, 1.4), point(4, 0.8)};
  falling.tiers[1].write_gbps = {point(1, 1.8), point(2, 1.2), point(4, 0.7)};
  out.push_back(request_for(falling, 4, 12));
  Profile mixed = mlpo::testing::io_bound_profile();
  mixed.tiers.erase(mixed.tiers.begin());
  mixed.tiers.push_back(tier("ssd", TierKind::other, 3, 1.5));
  for (auto& t : mixed.tiers) {
    t.mixed_read_gbps = {point(1, t.read_gbps[0].value.median * 0.6)};
    t.mixed_write_gbps = {point(1, t.write_gbps[0].value.median * 0.6)};
  }
  out.push_back(request_for(mixed, 3, 8));
  Profile small_nvme = mlpo::testing::io_bound_profile();
  small_nvme.tiers[1].free_bytes = small_nvme.tiers[1].capacity_bytes = std::int64_t{5} << 30;
  out.push_back(request_for(small_nvme, 2, 8));
  return out;
}

TEST(LimitValues, ARemoteTiersLimitsCountTheSlotsOfEveryNode) {
  // 2 nodes x 3 ranks: a node-local tier takes 1..3 and none; the remote tier, whose slot
  // files every node shares, the same per node: 2, 4, 6 and none. A tier updated in place:
  // none only. One node sees a remote k as k / nodes, at least 1.
  const Profile p = mlpo::testing::io_bound_profile();  // shm (host), nvme, pfs (remote)
  const ClusterShape shape{2, 3, 1, 0, 1};
  EXPECT_EQ(limit_values(p, 1, shape), (std::vector<std::int64_t>{1, 2, 3, 0}));
  EXPECT_EQ(limit_values(p, 2, shape), (std::vector<std::int64_t>{2, 4, 6, 0}));
  EXPECT_EQ(limit_values(p, 0, shape), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(node_limit(p.tiers[2], 4, 2), 2);
  EXPECT_EQ(node_limit(p.tiers[2], 1, 2), 1);
  EXPECT_EQ(node_limit(p.tiers[2], 0, 2), 0);
  EXPECT_EQ(node_limit(p.tiers[1], 4, 2), 4);
}

TEST(CandidateSearch, FindsTheExhaustiveSearchsBestPlanOnSmallCases) {
  int n = 0;
  for (const TuneRequest& req : small_cases()) {
    const Accounting a = account(req.model, req.shape);
    const ScoredPlan all = exhaustive_best(a, req);
    const CandidateSearchResult found = search_candidates(a, req, 8, false);
    ASSERT_FALSE(found.best.empty()) << "case " << n;
    EXPECT_NEAR(found.best.front().score / all.score, 1.0, 1e-9) << "case " << n;
    EXPECT_LT(static_cast<double>(found.scored), found.space) << "case " << n;
    // Refining never loses the grid's best.
    EXPECT_LE(search_candidates(a, req, 8, true).best.front().score, found.best.front().score * (1 + 1e-12))
        << "case " << n;
    ++n;
  }
}

TEST(CandidateSearch, EightTiersAndEightRanksScoreATinyPartOfTheSpace) {
  Profile p = mlpo::testing::io_bound_profile();
  p.tiers.clear();
  const char* names[] = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"};
  for (int t = 0; t < 8; ++t) {
    TierProfile x = tier(names[t], t == 7 ? TierKind::remote : TierKind::nvme, 1.0 + t * 0.25, 0.8 + t * 0.2);
    x.read_gbps.push_back(point(8, 0.7 + t * 0.2));  // loses throughput under concurrency
    x.write_gbps.push_back(point(8, 0.6 + t * 0.15));
    p.tiers.push_back(x);
  }
  TuneRequest req = request_for(p, 8, 64);
  req.model = find_preset("llama2-7b");
  const Accounting a = account(req.model, req.shape);
  const CandidateSearchResult found = search_candidates(a, req, 8);
  ASSERT_FALSE(found.best.empty());
  EXPECT_GT(found.space, 1e8);
  EXPECT_LT(static_cast<double>(found.scored), 1e-3 * found.space);
  EXPECT_GE(found.best.size(), 8u);  // the grid's 8, and up to 4 of the finer search's that beat them
  EXPECT_LE(found.best.size(), 12u);
}

}  // namespace
}  // namespace mlpo::tune
