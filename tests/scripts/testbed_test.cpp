// scripts/testbed.sh: two nodes on one machine (docs/testbed.md). ZeRO-3 with 2 ranks on 2 nodes
// must give the weights of one process bit for bit, its traffic must really cross the shaped
// links, its optimizer state must reach every node's NVMe and the shared tier, and `down` (or a
// failed `up`) must leave nothing behind. Skips, with the testbed's own reasons, where the
// machine lacks root, loop devices, network namespaces or the blkio controller.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/profile.hpp"
#include "tests/executor/io/temp_dir.hpp"

namespace mlpo::testing {
namespace {

namespace fs = std::filesystem;
using io::testing::TempDir;

const std::string kScript = std::string(MLPO_SOURCE_DIR) + "/scripts/testbed.sh";
const std::string kName = "ci" + std::to_string(::getpid() % 10000);

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` with its output in `log`; returns the exit status.
int sh(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > " + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string testbed(const std::string& args) { return "bash " + kScript + " --name " + kName + " " + args; }

class Testbed : public ::testing::Test {
 protected:
  void SetUp() override {
#if !MLPO_HAVE_MPI
    GTEST_SKIP() << "skipped: built with -DMLPO_MPI=OFF (the testbed launches ranks with mpirun)";
#endif
    if (sh("bash " + kScript + " check", dir_.path() / "check.log") != 0)
      GTEST_SKIP() << "skipped: the testbed cannot run here: " << read(dir_.path() / "check.log");
  }
  void TearDown() override { sh(testbed("down"), dir_.path() / "down-at-teardown.log"); }

  TempDir dir_;
};

// "link n1 sent A received B" and "tier n1 (/dev/loopN) read A written B" lines as name -> bytes.
std::map<std::string, double> counters(const std::string& text) {
  std::map<std::string, double> c;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind, name, w;
    words >> kind >> name;
    if (kind == "link") {
      double sent = 0, received = 0;
      words >> w >> sent >> w >> received;
      c["link " + name + " sent"] = sent;
      c["link " + name + " received"] = received;
    } else if (kind == "tier") {
      double read_bytes = 0, written = 0;
      words >> w >> w >> read_bytes >> w >> written;
      c["tier " + name + " read"] = read_bytes;
      c["tier " + name + " written"] = written;
    }
  }
  return c;
}

TEST_F(Testbed, TwoRanksOnTwoNodesGiveOneProcessesWeightsThroughTheLinksAndEveryTier) {
  const fs::path d = dir_.path();
  ASSERT_EQ(sh(testbed("up --nodes 2 --nvme-size 512M --remote-size 512M --shm-size 256M"), d / "up.log"), 0)
      << read(d / "up.log");
  const std::string run = MLPO_RUN_BIN;
  ASSERT_EQ(
      sh(run + " prepare-data --input " + MLPO_SOURCE_DIR + "/README.md --out " + (d / "tokens.bin").string(),
         d / "prepare.log"),
      0)
      << read(d / "prepare.log");
  const std::string mnt = "/mnt/mlpo-" + kName;
  std::ofstream(d / "plan.json")
      << R"({"schema": "mlpo.plan/1", "model": {"name": "tiny", "params": 853120},
    "cluster": {"nodes": 2, "gpus_per_node": 1, "micro_batch": 2, "grad_accum": 2, "seq_len": 32},
    "subgroup_elements": 65536, "buffers": 6, "prefetch_depth": 3, "host_cache_subgroups": 0,
    "order": "alternating", "gradients": "delayed", "mode": "mlp",
    "io": {"block_size": 1048576, "queue_depth": 8, "direct_io": true, "crc": true, "slot_scope": "combined"},
    "tiers": [{"name": "nvme", "path": ")" +
             mnt + R"(/nvme", "kind": "nvme", "fraction": 0.5, "concurrency_limit": 1},
              {"name": "remote", "path": ")" +
             mnt + R"(/remote", "kind": "remote", "fraction": 0.5, "concurrency_limit": 1}],
    "explanation": {"source": "tests/scripts/testbed_test.cpp"}})";
  const std::string common =
      " --model tiny --seq-len 32 --micro-batch 2 --steps 4 --seed 5 --threads 1 "
      "--blas-threads 1 --quiet --data " +
      (d / "tokens.bin").string();
  ASSERT_EQ(sh(run + common + " --grad-accum 4 --state-dir " + (d / "state").string() +
                   " --export-safetensors " + (d / "one.safetensors").string(),
               d / "one.log"),
            0)
      << read(d / "one.log");
  ASSERT_EQ(sh("timeout -k 5 100 " + testbed("mpirun -np 2 --map-by node " + run + common +
                                             " --grad-accum 2 --plan " + (d / "plan.json").string() +
                                             " --export-safetensors " + (d / "two.safetensors").string()),
               d / "two.log"),
            0)
      << read(d / "two.log");
  EXPECT_TRUE(read(d / "two.safetensors") == read(d / "one.safetensors"))
      << "2 ranks on 2 nodes changed the weights";

  ASSERT_EQ(sh(testbed("status --counters"), d / "status.log"), 0) << read(d / "status.log");
  const auto c = counters(read(d / "status.log"));
  for (const char* node : {"n1", "n2"}) {
    // ZeRO-3 moves every layer's weights and gradients between the ranks: megabytes, not the
    // few hundred bytes of neighbour discovery.
    EXPECT_GT(c.at(std::string("link ") + node + " sent"), 1e6) << read(d / "status.log");
    EXPECT_GT(c.at(std::string("link ") + node + " received"), 1e6) << read(d / "status.log");
  }
  for (const char* tier : {"n1", "n2", "remote"}) {
    EXPECT_GT(c.at(std::string("tier ") + tier + " written"), 1e6) << read(d / "status.log");
    EXPECT_GT(c.at(std::string("tier ") + tier + " read"), 1e6) << read(d / "status.log");
  }

  ASSERT_EQ(sh(testbed("down"), d / "down.log"), 0) << read(d / "down.log");
  EXPECT_EQ(sh(testbed("status"), d / "after.log"), 0) << read(d / "after.log");
  EXPECT_NE(read(d / "after.log").find("nothing left behind"), std::string::npos) << read(d / "after.log");
}

// mlpo-profile --comm-between-nodes measures comm.inter_node through the shaped link: the figure
// is a real transfer between the nodes (measured, bounded by the link's 1 Gbit/s = 0.125 GB/s;
// an unshaped veth pair moves gigabytes per second), not a typed-in number.
TEST_F(Testbed, TheCommProbeBetweenNodesMeasuresTheShapedLink) {
  const fs::path d = dir_.path();
  ASSERT_EQ(sh(testbed("up --nodes 2 --link 1gbit --nvme-size 256M --remote-size 256M --shm-size 64M"),
               d / "up.log"),
            0)
      << read(d / "up.log");
  fs::create_directories(d / "scratch");
  ASSERT_EQ(sh(std::string(MLPO_PROFILE_BIN) + " --quick --tier scratch=" + (d / "scratch").string() +
                   " --tier-size 8MiB --host-size 8MiB --reps 3 --model tiny --comm-size 8MiB "
                   "--comm-between-nodes \"" +
                   testbed("mpirun") + "\" --out " + (d / "profile.json").string(),
               d / "profile.log"),
            0)
      << read(d / "profile.log");
  const Profile p = load_profile((d / "profile.json").string());
  ASSERT_TRUE(p.comm.inter_node.measured) << read(d / "profile.log");
  EXPECT_EQ(p.comm.inter_node.ranks, 2);
  const double link_gbps = 1e9 / 8 / 1e9;
  for (const Measurement& m : {p.comm.inter_node.all_gather_gbps, p.comm.inter_node.reduce_scatter_gbps}) {
    EXPECT_GT(m.median, 0.2 * link_gbps) << read(d / "profile.log");
    EXPECT_LT(m.median, 1.1 * link_gbps) << "faster than the shaped link: the traffic did not cross it";
  }
}

TEST_F(Testbed, AFailedUpTearsDownWhatItMade) {
  const fs::path d = dir_.path();
  EXPECT_EQ(sh(testbed("up --nvme-size 512M --remote-size 512M --dir /proc/no-such-place"), d / "up.log"), 1)
      << read(d / "up.log");
  EXPECT_NE(read(d / "up.log").find("tearing down"), std::string::npos) << read(d / "up.log");
  EXPECT_EQ(sh(testbed("status"), d / "status.log"), 0) << read(d / "status.log");
  EXPECT_NE(read(d / "status.log").find("nothing left behind"), std::string::npos) << read(d / "status.log");
}

TEST_F(Testbed, BadSettingsAreRefusedBeforeAnythingIsMade) {
  const fs::path d = dir_.path();
  EXPECT_EQ(sh(testbed("up --nvme 400M"), d / "up.log"), 2);
  EXPECT_NE(read(d / "up.log").find("READ:WRITE"), std::string::npos) << read(d / "up.log");
  EXPECT_EQ(sh(testbed("up --link 1gbit:200us"), d / "link.log"), 2);
  EXPECT_NE(read(d / "link.log").find("--link 1gbit:200us"), std::string::npos) << read(d / "link.log");
  EXPECT_EQ(sh(testbed("status"), d / "status.log"), 0) << read(d / "status.log");
}

}  // namespace
}  // namespace mlpo::testing
