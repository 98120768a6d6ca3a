#include "executor/comm/open_communicator.hpp"

#include "core/error.hpp"
#include "executor/comm/single_process_communicator.hpp"
#if MLPO_HAVE_MPI
#include "executor/comm/internal/mpi_communicator.hpp"
#endif
#if MLPO_HAVE_NCCL
#include "executor/comm/internal/nccl_communicator.hpp"
#endif

namespace mlpo::comm {

CommBackend parse_comm_backend(const std::string& text, const std::string& option) {
  if (text == "auto") return CommBackend::automatic;
  if (text == "single") return CommBackend::single;
  if (text == "mpi") return CommBackend::mpi;
  if (text == "nccl") return CommBackend::nccl;
  throw Error(option + ": unknown communicator '" + text + "'; use auto, single, mpi or nccl");
}

bool have_mpi() { return MLPO_HAVE_MPI; }
bool have_nccl() { return MLPO_HAVE_NCCL; }

namespace {

std::unique_ptr<Communicator> open_mpi([[maybe_unused]] const LaunchEnv& env) {
#if MLPO_HAVE_MPI
  return std::make_unique<MpiCommunicator>(env);
#else
  throw Error("this build has no MPI communicator, but the job needs one (launcher: " + env.launcher + ", " +
              std::to_string(env.size) +
              " ranks); install Open MPI (scripts/setup.sh) and rebuild with -DMLPO_MPI=ON");
#endif
}

std::unique_ptr<Communicator> open_host(const LaunchEnv& env) {
  if (env.multi_rank()) return open_mpi(env);
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace

std::unique_ptr<Communicator> open_communicator(const LaunchEnv& env, CommBackend backend) {
  switch (backend) {
    case CommBackend::automatic:
      return open_host(env);
    case CommBackend::single:
      if (env.multi_rank())
        throw Error("communicator single: the launcher (" + env.launcher + ") started " +
                    std::to_string(env.size) +
                    " ranks; use auto or mpi, or run one process without mpirun/srun");
      return std::make_unique<SingleProcessCommunicator>();
    case CommBackend::mpi:
      return open_mpi(env);
    case CommBackend::nccl:
#if MLPO_HAVE_NCCL
      return std::make_unique<NcclCommunicator>(open_host(env));
#else
      throw Error(
          "communicator nccl: this build has no NCCL communicator (it needs nvcc and NCCL next to the CUDA "
          "toolkit at configure time); use auto or mpi");
#endif
  }
  MLPO_CHECK(false, "unknown communicator backend");
}

}  // namespace mlpo::comm
