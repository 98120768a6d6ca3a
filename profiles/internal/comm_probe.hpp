#pragma once
// Comm probe: the figures of the profile's comm.host_mpi (CollectiveRates, core/profile.hpp)
// — host-side MPI collectives between the ranks of this node, timed through the executor's
// own Communicator (executor/comm) as its ZeRO-3 exchange calls them: an all-gather of bf16
// weights and a reduce-scatter (rank-order sum) of fp32 gradients over full buffers of
// buffer_bytes / 16, / 4 and / 1, and a one-element all-gather. Each repetition is the
// slowest rank's time after a barrier. Latency: the smaller intercept of the two lines through
// the sizes' median times (never below the one-element time); bus bandwidth at the largest size =
// bytes (W-1)/W / (time - latency).
//
// `mlpo-profile --comm` calls probe_host_mpi, which launches `mpirun -np <ranks>` copies of
// the running program with `--comm-probe-child FILE` (run_comm_probe_child: every rank
// measures, rank 0 writes the figures to FILE) and reads them back. Without mpirun, or when
// the launch fails or takes longer than `timeout_s`, it returns unmeasured figures and says
// why in a warning to `diagnostics` (the models then leave the collectives out, with their own
// warning).
// Costs a few seconds (2 ranks, 32 MiB, 5 repetitions).
// Between nodes, probe_inter_node runs the same child mode with one rank per node (or
// ranks_per_node) through a launcher that reaches the nodes (the testbed's
// `scripts/testbed.sh mpirun`, or an mpirun with a hostfile); the figures describe the slowest
// path between two nodes (comm.inter_node) with that many ranks of each node sharing it.

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "executor/io/tier.hpp"
#include "core/diagnostics.hpp"

namespace mlpo::profiles {

struct CommProbeOptions {
  int ranks = 2;
  // Between nodes (comm.inter_node): the command that launches ranks on several nodes, in words
  // (e.g. {"scripts/testbed.sh", "mpirun"}, or {"mpirun", "--hostfile", "hosts"}); it is given
  // `-np <ranks> --map-by node PROGRAM ...`. Empty: mpirun from PATH, all ranks on this node.
  std::vector<std::string> launcher;
  // Between nodes: ranks on each node (`ranks` counts the nodes). With more than one, the
  // node's ranks share its link as a run's do, and the figures are those of the run's shape.
  int ranks_per_node = 1;
  std::int64_t buffer_bytes = std::int64_t{32} << 20;  // a layer-sized message
  int repetitions = 5;
  double timeout_s = 60;
  std::string program;  // the program with the child mode (mlpo-profile); empty: this one
};

// In the launched ranks (the child mode): measures over MPI and, on rank 0, writes the
// figures as JSON to `out`. Returns the process's exit status (errors end the job through
// run_ranked).
int run_comm_probe_child(const std::string& out, const CommProbeOptions& options);

// In mlpo-profile: launches the child mode under mpirun and returns what it measured.
CollectiveRates probe_host_mpi(const CommProbeOptions& options, const Diagnostics& diagnostics);

// The same collectives between nodes (`mlpo-profile --comm-between-nodes LAUNCHER`): options.ranks
// nodes of options.ranks_per_node ranks each, launched by options.launcher; the figures of
// comm.inter_node.
CollectiveRates probe_inter_node(const CommProbeOptions& options, const Diagnostics& diagnostics);

}  // namespace mlpo::profiles
