#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/error.hpp"
#include "executor/comm/open_communicator.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::comm {
namespace {

using mlpo::testing::expect_refusal;

TEST(SingleProcessCommunicator, IsRankZeroOfOneOnOneNode) {
  SingleProcessCommunicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.local_rank(), 0);
  EXPECT_EQ(comm.local_size(), 1);
  EXPECT_EQ(comm.node(), 0);
  EXPECT_EQ(comm.nodes(), 1);
  EXPECT_EQ(comm.memory(), MemorySpace::host);
}

TEST(SingleProcessCommunicator, CollectivesReturnTheOneContribution) {
  SingleProcessCommunicator comm;
  const std::vector<float> mine = {1.5f, -2.0f, 3.25f};
  std::vector<float> all(3);
  comm.all_gather(std::span<const float>(mine), std::span<float>(all));
  EXPECT_EQ(all, mine);

  std::vector<bf16> grads = {float_to_bf16(0.1f), float_to_bf16(-7.0f)};
  std::vector<bf16> piece(2);
  comm.reduce_scatter_sum(std::span<const bf16>(grads), std::span<bf16>(piece));
  EXPECT_EQ(piece[0].bits, grads[0].bits);
  EXPECT_EQ(piece[1].bits, grads[1].bits);

  std::vector<double> sums = {0.1, 0.2};
  comm.all_reduce_sum(std::span<double>(sums));
  EXPECT_EQ(sums, (std::vector<double>{0.1, 0.2}));
  std::vector<std::int64_t> most = {4, -4};
  comm.all_reduce_max(std::span<std::int64_t>(most));
  EXPECT_EQ(most, (std::vector<std::int64_t>{4, -4}));
  std::vector<std::byte> bytes = {std::byte{9}};
  comm.broadcast(std::span<std::byte>(bytes), 0);
  EXPECT_EQ(bytes[0], std::byte{9});
  comm.barrier();
}

TEST(CheckWorldMatches, AcceptsThePlannedShape) {
  SingleProcessCommunicator comm;
  ClusterShape one;
  EXPECT_NO_THROW(check_world_matches(comm, one));
}

TEST(CheckWorldMatches, NamesLaunchedAndPlannedShapesAndTheFix) {
  SingleProcessCommunicator comm;
  ClusterShape planned;
  planned.nodes = 2;
  planned.ranks_per_node = 4;
  expect_refusal([&] { check_world_matches(comm, planned); },
                 {"the plan is for 2 nodes x 4 ranks per node = 8 ranks",
                  "launched as 1 node x 1 ranks per node = 1 ranks", "mlpo-tune --nodes 1 --gpus-per-node 1"},
                 "no error");
}

TEST(OpenCommunicator, WorldOfOneNeedsNoMpi) {
  const auto comm = open_communicator(LaunchEnv{}, CommBackend::automatic);
  EXPECT_STREQ(comm->backend(), "single");
}

TEST(OpenCommunicator, SingleBackendRefusesALaunchedJob) {
  LaunchEnv env;
  env.launcher = "openmpi";
  env.rank = 0;
  env.size = 2;
  EXPECT_THROW(open_communicator(env, CommBackend::single), Error);
}

TEST(OpenCommunicator, UnknownBackendNameIsAnError) {
  EXPECT_EQ(parse_comm_backend("nccl", "--comm"), CommBackend::nccl);
  expect_refusal([] { parse_comm_backend("gloo", "--comm"); }, {"--comm: unknown communicator 'gloo'"},
                 "no error");
}

}  // namespace
}  // namespace mlpo::comm
