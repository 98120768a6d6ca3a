#include "executor/train/train_input_checks.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"

namespace mlpo::train {

namespace fs = std::filesystem;

void check_train_options(const TrainOptions& o, const comm::Communicator& comm, const BackendChoice& backend) {
  if (o.steps < 1) throw Error("--steps: must be >= 1");
  if (o.micro_batch < 1) throw Error("--micro-batch: must be >= 1");
  if (o.grad_accum < 1) throw Error("--grad-accum: must be >= 1");
  if (o.checkpoint_every < 0) throw Error("--checkpoint-every: must be >= 0");
  if (o.resume && o.checkpoint_dir.empty()) throw Error("--resume needs --checkpoint-dir (where the checkpoints are)");
  if (comm.memory() != comm::MemorySpace::host) {
    if (backend.kind != BackendChoice::Kind::cuda)
      throw Error(std::string("--comm ") + comm.backend() + ": this communicator moves GPU buffers, but training runs on the "
                  "CPU backend, whose buffers are host memory; use --comm mpi (or auto), or --backend cuda");
    if (comm.size() > 1)
      throw Error(std::string("--comm ") + comm.backend() + ": trains on one rank only for now (" + std::to_string(comm.size()) +
                  " launched): the ZeRO-3 layer exchange moves host buffers; use --comm mpi (or auto) with --backend cuda");
    if (backend.device >= 0 && backend.device != comm.local_rank())
      throw Error("--backend " + backend.describe() + " with --comm " + comm.backend() + ": the NCCL communicator runs on the "
                  "local rank's GPU (cuda:" + std::to_string(comm.local_rank()) + "); use --backend cuda");
  }
  if (o.param_offload && comm.size() > 1)
    throw Error("--param-offload: is for a single process; with " + std::to_string(comm.size()) +
                " ranks the weights are already sharded (ZeRO-3) and gathered one part at a time; drop --param-offload");
  if (!o.export_safetensors.empty()) {
    const fs::path parent = fs::absolute(o.export_safetensors).parent_path();
    if (!fs::is_directory(parent) || ::access(parent.c_str(), W_OK) != 0)
      throw Error("--export-safetensors " + o.export_safetensors + ": directory " + parent.string() + " does not exist or is not writable");
  }
}

void check_train_plan(const TrainOptions& o, const Plan& plan, std::int64_t params) {
  validate(plan);
  if (plan.model_params != params)
    throw Error("--plan: made for a model of " + std::to_string(plan.model_params) + " parameters ('" + plan.model_name +
                "'), but --model " + o.model.name + " has " + std::to_string(params) +
                "; make a plan for this model with mlpo-tune --model " + o.model.name);
  for (const auto& t : plan.tiers)
    if (t.kind != TierKind::memory && !fs::is_directory(t.path))
      throw Error("--plan: tier '" + t.name + "' (" + t.path + "): directory does not exist; create it or fix the plan's path");
}

}  // namespace mlpo::train
