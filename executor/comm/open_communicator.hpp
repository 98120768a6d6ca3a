#pragma once
// open_communicator: the one place a process picks and starts its communicator.
//   automatic  a world of one (no launcher) -> SingleProcessCommunicator; launched by
//              mpirun/srun -> MpiCommunicator
//   single     SingleProcessCommunicator; an Error when the launcher started several ranks
//   mpi        MpiCommunicator, even for a world of one
//   nccl       NcclCommunicator bootstrapped through MPI (or, for a world of one, through
//              the single-process communicator, so world size 1 needs no MPI)
// Backends this build lacks are an Error naming the CMake option that brings them.

#include <memory>
#include <string>

#include "executor/comm/communicator.hpp"
#include "executor/comm/launch_env.hpp"

namespace mlpo::comm {

enum class CommBackend { automatic, single, mpi, nccl };

// "auto", "single", "mpi" or "nccl"; anything else is an Error naming `option`.
CommBackend parse_comm_backend(const std::string& text, const std::string& option);

// Whether this build has the MPI / NCCL communicators.
bool have_mpi();
bool have_nccl();

std::unique_ptr<Communicator> open_communicator(const LaunchEnv& env, CommBackend backend);

}  // namespace mlpo::comm
