#pragma once
// LaunchEnv: where this process sits in the job, as the launcher's environment says, read
// before any communication library starts (the CUDA device must be chosen from the local rank
// before NCCL starts, and a world of one needs no MPI at all). Recognised launchers, first
// match wins:
//   Open MPI mpirun   OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE
//   Slurm srun        SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), SLURM_LOCALID,
//                     SLURM_NODEID, SLURM_STEP_NUM_NODES (else SLURM_NNODES)
//   PMI (MPICH hydra) PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
//   PMIx              PMIX_RANK (and PMIX_SIZE when set)
// None of them: a world of one. Values the launcher does not give stay -1 (unknown); the
// MPI communicator then computes them itself (local ranks from shared-memory groups).

#include <functional>
#include <optional>
#include <string>

namespace mlpo::comm {

struct LaunchEnv {
  int rank = 0;
  int size = 1;         // -1: launched, but the launcher did not say how many
  int local_rank = -1;  // -1: the launcher did not say
  int local_size = -1;
  int node = -1;
  int nodes = -1;
  std::string launcher = "none";  // "openmpi", "slurm", "pmi", "pmix" or "none"

  bool multi_rank() const { return size != 1; }
};

// Reads the variables through `lookup` (name -> value, nullopt when unset), so tests can
// pass their own. Throws mlpo::Error naming the variable when a value is not an integer or
// is out of range (rank >= size, negative sizes).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
LaunchEnv parse_launch_env(const EnvLookup& lookup);

// parse_launch_env over this process's environment.
LaunchEnv launch_env();

}  // namespace mlpo::comm
