#include "executor/comm/launch_env.hpp"

#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace mlpo::comm {

namespace {

// Value of `name` as an int >= min_value, or nullopt when unset.
std::optional<int> read_int(const EnvLookup& lookup, const char* name, int min_value) {
  const std::optional<std::string> text = lookup(name);
  if (!text) return std::nullopt;
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(*text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text->size() || value < min_value || value > (1L << 30))
    throw Error(std::string("launcher environment: ") + name + "='" + *text + "' is not an integer >= " +
                std::to_string(min_value) + "; unset it or launch with mpirun/srun");
  return static_cast<int>(value);
}

std::optional<int> first_of(const EnvLookup& lookup, const char* a, const char* b, int min_value) {
  if (auto v = read_int(lookup, a, min_value)) return v;
  return read_int(lookup, b, min_value);
}

// A launcher that gives the rank, the world size, the local rank and the local size in four variables.
struct RankVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr RankVariables kOpenMpi{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr RankVariables kPmi{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};

// Fills env for a process of `names`'s launcher whose rank variable read `rank`.
void read_rank_variables(const EnvLookup& lookup, const RankVariables& names, int rank, LaunchEnv& env) {
  env.launcher = names.launcher;
  env.rank = rank;
  env.size = read_int(lookup, names.size, 1).value_or(-1);
  env.local_rank = read_int(lookup, names.local_rank, 0).value_or(-1);
  env.local_size = read_int(lookup, names.local_size, 1).value_or(-1);
}

void check_consistent(const LaunchEnv& env) {
  const std::string who = "launcher environment (" + env.launcher + ")";
  if (env.size > 0 && env.rank >= env.size)
    throw Error(who + ": rank " + std::to_string(env.rank) + " is not below the world size " +
                std::to_string(env.size));
  if (env.local_size > 0 && env.local_rank >= env.local_size)
    throw Error(who + ": local rank " + std::to_string(env.local_rank) + " is not below the local size " +
                std::to_string(env.local_size));
  if (env.nodes > 0 && env.node >= env.nodes)
    throw Error(who + ": node " + std::to_string(env.node) + " is not below the node count " +
                std::to_string(env.nodes));
}

}  // namespace

LaunchEnv parse_launch_env(const EnvLookup& lookup) {
  LaunchEnv env;
  if (auto rank = read_int(lookup, kOpenMpi.rank, 0)) {
    read_rank_variables(lookup, kOpenMpi, *rank, env);
  } else if (auto procid = read_int(lookup, "SLURM_PROCID", 0)) {
    // Inside an sbatch script (no srun) SLURM_PROCID and SLURM_NTASKS describe the allocation,
    // not this process; srun sets the SLURM_STEP_* values of the step it launched.
    env.launcher = "slurm";
    env.rank = *procid;
    env.size = first_of(lookup, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", 1).value_or(-1);
    env.local_rank = read_int(lookup, "SLURM_LOCALID", 0).value_or(-1);
    env.node = read_int(lookup, "SLURM_NODEID", 0).value_or(-1);
    env.nodes = first_of(lookup, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", 1).value_or(-1);
  } else if (auto pmi = read_int(lookup, kPmi.rank, 0)) {
    read_rank_variables(lookup, kPmi, *pmi, env);
  } else if (auto pmix = read_int(lookup, "PMIX_RANK", 0)) {
    env.launcher = "pmix";
    env.rank = *pmix;
    // PMIx keeps the size in its server, not always in the environment: -1 (unknown) then,
    // and the MPI communicator asks MPI.
    env.size = read_int(lookup, "PMIX_SIZE", 1).value_or(-1);
  }
  check_consistent(env);
  return env;
}

LaunchEnv launch_env() {
  return parse_launch_env([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace mlpo::comm
