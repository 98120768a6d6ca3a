#pragma once
// The checks train() makes on its options and plan before it writes anything, each an
// mlpo::Error that names the option at fault and the fix. Cheap: no data is read, nothing
// is created (the data file, checkpoint and device memory are checked where train() opens
// them).

#include <cstdint>

#include "core/plan.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/compute/compute_backend.hpp"
#include "executor/train/training_loop.hpp"

namespace mlpo::train {

// The options alone and against the job: counts in range; the learning-rate schedule (rates
// finite, --min-lr <= --lr, steps >= 0), AdamW's betas in [0, 1), eps finite > 0, weight decay
// finite >= 0, a finite clipping threshold; --resume with a --checkpoint-dir that is not a
// file; a GPU-buffer communicator (NCCL) only with the CUDA backend, on one rank and on the
// local rank's GPU; --param-offload only on one process; an --export-safetensors path that is
// not a directory, in a directory that exists and is writable. train() makes these checks
// before it prints anything (the default plan included).
void check_train_options(const TrainOptions& options, const comm::Communicator& comm,
                         const compute::BackendChoice& backend);

// The plan is valid, made for a model of `params` parameters, and each file tier's directory
// exists. (Its cluster shape against the launched world: comm::check_world_matches, collective.)
void check_train_plan(const TrainOptions& options, const Plan& plan, std::int64_t params);

}  // namespace mlpo::train
