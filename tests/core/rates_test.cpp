// Rates: the one path from a profile to the models' rates. The node's Adam throughput is one
// formula whoever asks — the models (fractional threads per rank), the tuner's in-place tier
// and the executor's bound (its whole threads).
#include "core/rates.hpp"

#include <gtest/gtest.h>

#include "core/accounting.hpp"

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

}  // namespace
}  // namespace mlpo
