#include "executor/train/internal/train_input_checks.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/path_checks.hpp"
#include "executor/hf/hf_export.hpp"

namespace mlpo::train {

namespace fs = std::filesystem;

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The optimizer's hyper-parameters and the schedule: finite and in range (the CLI's flag
// validators say the same; this keeps a library caller from training to NaN).
void check_optimizer_options(const TrainOptions& o) {
  validate(o.lr);
  if (o.lr.decay_end < 0)
    throw Error("--lr-decay-steps: must be >= 0 (0 = --steps), got " + std::to_string(o.lr.decay_end));
  const std::pair<const char*, float> betas[] = {{"--beta1", o.beta1}, {"--beta2", o.beta2}};
  for (const auto& [flag, beta] : betas)
    if (!(beta >= 0.0f && beta < 1.0f))
      throw Error(std::string(flag) + ": must be in [0, 1), got " + number_text(beta));
  if (!(o.eps > 0.0f) || !std::isfinite(o.eps))
    throw Error("--eps: must be a finite number > 0, got " + number_text(o.eps));
  if (!(o.weight_decay >= 0.0f) || !std::isfinite(o.weight_decay))
    throw Error("--weight-decay: must be a finite number >= 0, got " + number_text(o.weight_decay));
  if (!std::isfinite(o.max_grad_norm))
    throw Error("--max-grad-norm: must be a finite number (0 = no clipping), got " +
                number_text(o.max_grad_norm));
}

}  // namespace

void check_train_options(const TrainOptions& o, const comm::Communicator& comm,
                         const compute::BackendChoice& backend) {
  if (o.steps < 1) throw Error("--steps: must be >= 1");
  if (o.micro_batch < 1) throw Error("--micro-batch: must be >= 1");
  if (o.grad_accum < 1) throw Error("--grad-accum: must be >= 1");
  if (o.checkpoint_every < 0) throw Error("--checkpoint-every: must be >= 0");
  check_optimizer_options(o);
  if (o.resume && o.checkpoint_dir.empty())
    throw Error("--resume needs --checkpoint-dir (where the checkpoints are)");
  if (comm.memory() != comm::MemorySpace::host) {
    if (backend.kind != compute::BackendChoice::Kind::cuda)
      throw Error(std::string("--comm ") + comm.backend() +
                  ": this communicator moves GPU buffers, but training runs on the "
                  "CPU backend, whose buffers are host memory; use --comm mpi (or auto), or --backend cuda");
    if (comm.size() > 1)
      throw Error(std::string("--comm ") + comm.backend() + ": trains on one rank only for now (" +
                  std::to_string(comm.size()) +
                  " launched): the ZeRO-3 layer exchange moves host buffers; use --comm mpi (or auto) with "
                  "--backend cuda");
    if (backend.device >= 0 && backend.device != comm.local_rank())
      throw Error("--backend " + backend.describe() + " with --comm " + comm.backend() +
                  ": the NCCL communicator runs on the "
                  "local rank's GPU (cuda:" +
                  std::to_string(comm.local_rank()) + "); use --backend cuda");
  }
  if (o.param_offload && comm.size() > 1)
    throw Error("--param-offload: is for a single process; with " + std::to_string(comm.size()) +
                " ranks the weights are already sharded (ZeRO-3) and gathered one part at a time; drop "
                "--param-offload");
  if (!o.export_safetensors.empty() && hf::exports_single_file(o.export_safetensors)) {
    check_output_file(o.export_safetensors, "--export-safetensors");
  } else if (!o.export_safetensors.empty()) {  // a directory (hf_export.hpp checks what it holds)
    fs::path target = fs::absolute(o.export_safetensors).lexically_normal();
    if (!target.has_filename()) target = target.parent_path();  // "DIR/"
    const fs::path parent = target.parent_path();
    if (!fs::is_directory(parent) || ::access(parent.c_str(), W_OK) != 0)
      throw Error("--export-safetensors " + o.export_safetensors + ": directory " + parent.string() +
                  " does not exist or is not writable");
  }
  if (!o.checkpoint_dir.empty() && fs::exists(o.checkpoint_dir) && !fs::is_directory(o.checkpoint_dir))
    throw Error("--checkpoint-dir " + o.checkpoint_dir +
                ": exists and is not a directory; give a directory (it is created if missing)");
}

void check_train_plan(const TrainOptions& o, const Plan& plan, std::int64_t params) {
  validate(plan);
  if (plan.model_params != params)
    throw Error("--plan: made for a model of " + std::to_string(plan.model_params) + " parameters ('" +
                plan.model_name + "'), but --model " + o.model.name + " has " + std::to_string(params) +
                "; make a plan for this model with mlpo-tune --model " + o.model.name);
  for (const auto& t : plan.tiers)
    if (t.kind != TierKind::memory && !fs::is_directory(t.path))
      throw Error("--plan: tier '" + t.name + "' (" + t.path +
                  "): directory does not exist; create it or fix the plan's path");
}

}  // namespace mlpo::train
