#pragma once
// The settings a resumed run must share with the checkpoint's run to continue bitwise: the
// sequence length, micro-batch, global micro-batches per step, learning-rate schedule, AdamW
// hyper-parameters, clipping, OpenBLAS threads and data size. Every checkpoint records them
// (manifest "settings"); --resume compares them, and a difference is a warning, not an error —
// the run goes on, but will not match an uninterrupted one.
//
// grad_accum is the global number of micro-batches per step (ranks x --grad-accum), the
// quantity that fixes the numbers; "ranks" is recorded for information and not compared, so a
// checkpoint resumes on another world size without a warning when ranks x --grad-accum stays.

#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "executor/train/internal/lr_schedule.hpp"
#include "executor/data/token_data.hpp"
#include "executor/train/training_loop.hpp"

namespace mlpo::train {

// `lr`: the schedule as run (decay_end resolved); `blas_threads`: as run (0 resolved).
Json resume_settings(const TrainOptions& options, const LrSchedule& lr, unsigned blas_threads,
                     const data::TokenData& data, int ranks);

// One "warning: resume: ..." line per compared setting of `run` that `checkpoint` lacks or
// holds with another value, in key order; none when they match.
std::vector<std::string> resume_setting_warnings(const Json& run, const Json& checkpoint);

}  // namespace mlpo::train
