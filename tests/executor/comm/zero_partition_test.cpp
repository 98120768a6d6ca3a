#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "executor/comm/zero_partition.hpp"

namespace mlpo::comm {
namespace {

TEST(ZeroPartition, ShardsAreTheOptimizerShards) {
  const ZeroPartition p(100000, 3, 1);
  for (int r = 0; r < 3; ++r) {
    const RankShard want = shard_for(100000, 3, r);
    EXPECT_EQ(p.shard(r).global_begin, want.global_begin);
    EXPECT_EQ(p.shard(r).elements, want.elements);
  }
  EXPECT_EQ(p.mine().global_begin, shard_for(100000, 3, 1).global_begin);
}

TEST(ZeroPartition, LayerPiecesConcatenateToTheLayerInRankOrder) {
  const ZeroPartition p(100000, 4, 2);  // shards of 28672 elements
  const ParamRange layer{20000, 70000};
  const std::vector<std::int64_t> counts = p.counts(layer);
  EXPECT_EQ(counts, (std::vector<std::int64_t>{8672, 28672, 12656, 0}));
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}), layer.size());
  const ParamRange mine = p.my_piece(layer);
  EXPECT_EQ(mine.begin, 57344);
  EXPECT_EQ(mine.end, 70000);
  EXPECT_EQ(p.my_piece(ParamRange{0, 100}).size(), 0);
}

TEST(ZeroPartition, ZeroRanksIsAnError) { EXPECT_THROW(ZeroPartition(10, 0, 0), Error); }

TEST(LayerExchange, GatherAndScatterOnOneRankCopyTheLayer) {
  SingleProcessCommunicator comm;
  const ZeroPartition p(9000, 1, 0);
  LayerExchange exchange(comm, p);
  std::vector<bf16> shard(9000), full(3000), grads(9000);
  for (std::size_t i = 0; i < shard.size(); ++i) shard[i] = float_to_bf16(static_cast<float>(i));
  exchange.gather<bf16>(ParamRange{4000, 7000}, shard, full).wait();
  EXPECT_EQ(bf16_to_float(full[0]), 4000.0f);
  EXPECT_EQ(bf16_to_float(full[2999]), bf16_to_float(float_to_bf16(6999.0f)));
  std::vector<bf16> layer_grads(3000, float_to_bf16(0.5f));
  exchange.reduce_scatter<bf16>(ParamRange{4000, 7000}, layer_grads, grads).wait();
  EXPECT_EQ(bf16_to_float(grads[3999]), 0.0f);
  EXPECT_EQ(bf16_to_float(grads[4000]), 0.5f);
  EXPECT_EQ(bf16_to_float(grads[6999]), 0.5f);
  EXPECT_EQ(bf16_to_float(grads[7000]), 0.0f);
  exchange.drain();
}

TEST(PrefetchedLayers, HandsOutEachLayerOfTheSequenceInOrder) {
  SingleProcessCommunicator comm;
  const ZeroPartition p(600, 1, 0);
  LayerExchange exchange(comm, p);
  std::vector<bf16> shard(600);
  for (std::size_t i = 0; i < shard.size(); ++i) shard[i] = float_to_bf16(static_cast<float>(i));
  const std::vector<ParamRange> walk = {{0, 100}, {100, 350}, {350, 600}, {350, 600}, {100, 350}, {0, 100}};
  std::vector<bf16> a(250), b(250);
  PrefetchedLayers layers(exchange, walk, shard, a, b);
  for (const ParamRange& r : walk) {
    std::span<const bf16> got = layers.acquire();
    ASSERT_EQ(got.size(), static_cast<std::size_t>(r.size()));
    EXPECT_EQ(got.front().bits, shard[static_cast<std::size_t>(r.begin)].bits);
    EXPECT_EQ(got.back().bits, shard[static_cast<std::size_t>(r.end - 1)].bits);
    layers.release();
  }
  EXPECT_EQ(layers.position(), walk.size());
  // The exchange's totals for the run log: its thread ran every gather (CPU time), and the
  // caller's waits for them are counted (none negative).
  const ExchangeTotals totals = exchange.totals();
  EXPECT_GT(totals.thread_cpu_s, 0);
  EXPECT_GE(totals.gather_wait_s, 0);
}

TEST(LayerExchange, AnOperationsErrorReachesWaitAndDrain) {
  // A communicator whose gathers fail: the error comes back through Pending and drain().
  class FailingCommunicator final : public Communicator {
   public:
    FailingCommunicator() : Communicator(RankPlace{}) {}
    const char* backend() const override { return "failing"; }
    MemorySpace memory() const override { return MemorySpace::host; }
    void barrier() override {}
    [[noreturn]] void abort_job(const std::string&) override { std::abort(); }

   protected:
    void do_all_gather(const void*, void*, std::span<const std::int64_t>, ElementType) override {
      throw Error("network down");
    }
    void do_reduce_scatter_sum(const void*, void*, std::span<const std::int64_t>, ElementType) override {}
    void do_all_reduce_sum(void*, std::int64_t, ElementType) override {}
    void do_all_reduce_max(void*, std::int64_t, ElementType) override {}
    void do_broadcast(void*, std::int64_t, int) override {}
  };
  FailingCommunicator comm;
  const ZeroPartition p(100, 1, 0);
  LayerExchange exchange(comm, p);
  std::vector<bf16> shard(100), full(100);
  Pending pending = exchange.gather<bf16>(ParamRange{0, 100}, shard, full);
  EXPECT_THROW(pending.wait(), Error);
  EXPECT_THROW(exchange.drain(), Error);
  EXPECT_NO_THROW(exchange.drain());  // reported once
}

}  // namespace
}  // namespace mlpo::comm
