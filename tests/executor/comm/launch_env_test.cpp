#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.hpp"
#include "executor/comm/launch_env.hpp"

namespace mlpo::comm {
namespace {

LaunchEnv parse(const std::map<std::string, std::string>& vars) {
  return parse_launch_env([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(LaunchEnv, NoLauncherIsAWorldOfOne) {
  const LaunchEnv env = parse({{"HOME", "/root"}});
  EXPECT_EQ(env.launcher, "none");
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.size, 1);
  EXPECT_FALSE(env.multi_rank());
}

TEST(LaunchEnv, OpenMpiGivesRankSizeAndLocalRank) {
  const LaunchEnv env = parse({{"OMPI_COMM_WORLD_RANK", "5"},
                               {"OMPI_COMM_WORLD_SIZE", "8"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(env.launcher, "openmpi");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_size, 4);
  EXPECT_EQ(env.node, -1);  // Open MPI does not say; MPI computes it
  EXPECT_TRUE(env.multi_rank());
}

TEST(LaunchEnv, SlurmStepValuesWinOverTheAllocation) {
  const LaunchEnv env = parse({{"SLURM_PROCID", "3"},
                               {"SLURM_NTASKS", "16"},
                               {"SLURM_STEP_NUM_TASKS", "4"},
                               {"SLURM_LOCALID", "1"},
                               {"SLURM_NODEID", "1"},
                               {"SLURM_NNODES", "8"},
                               {"SLURM_STEP_NUM_NODES", "2"}});
  EXPECT_EQ(env.launcher, "slurm");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.node, 1);
  EXPECT_EQ(env.nodes, 2);
}

TEST(LaunchEnv, OpenMpiWinsOverSlurmWhenBothAreSet) {
  // mpirun inside a Slurm allocation: the allocation's SLURM_* describe the batch script.
  const LaunchEnv env = parse({{"SLURM_PROCID", "0"},
                               {"SLURM_NTASKS", "16"},
                               {"OMPI_COMM_WORLD_RANK", "2"},
                               {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_EQ(env.launcher, "openmpi");
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.size, 4);
}

TEST(LaunchEnv, PmiAndPmixAreRecognised) {
  const LaunchEnv pmi =
      parse({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.rank, 1);
  EXPECT_EQ(pmi.local_size, 2);
  const LaunchEnv pmix = parse({{"PMIX_RANK", "0"}});
  EXPECT_EQ(pmix.launcher, "pmix");
  EXPECT_EQ(pmix.size, -1);  // unknown: MPI will say
  EXPECT_TRUE(pmix.multi_rank());
}

TEST(LaunchEnv, MalformedValueNamesTheVariable) {
  try {
    parse({{"OMPI_COMM_WORLD_RANK", "two"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("OMPI_COMM_WORLD_RANK='two'"), std::string::npos) << e.what();
  }
}

TEST(LaunchEnv, RankBeyondTheWorldIsRejected) {
  EXPECT_THROW(parse({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}), Error);
  EXPECT_THROW(parse({{"OMPI_COMM_WORLD_RANK", "0"},
                      {"OMPI_COMM_WORLD_SIZE", "2"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
               Error);
}

}  // namespace
}  // namespace mlpo::comm
