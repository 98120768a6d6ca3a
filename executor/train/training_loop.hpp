#pragma once
// The training loop: pre-training of a LLaMA-style model whose optimizer state lives in the
// offload engine under a plan. One function, train(), reads top to bottom like the algorithm:
//
//   check every input (model, plan, data, checkpoint) before touching anything
//   fp32 master weights p (offload engine) := checkpoint, or the model's hashed init
//   bf16 weights on the device := round(p)
//   for step = first .. steps:
//     zero the fp32 gradient accumulator on the device
//     for each of grad_accum micro-batches (micro_batch sequences of seq_len tokens):
//       forward -> loss;  backward with loss scale 1/grad_accum
//       (last micro-batch: each layer's gradient range is cast to bf16 and copied to host
//        memory as soon as backward has finished it — the GradientsReady hook)
//     global gradient norm of the bf16 host gradients (chunked, plan-independent) -> clip scale
//     [baseline mode: flush fp32 gradients to the tier]
//     update phase: AdamW over every subgroup under the plan (fetch, update, write back),
//       lr from the warm-up + cosine schedule, bf16 copy of the new p into host weights
//     new bf16 weights -> device
//     log the step; every checkpoint_every steps and at the end: checkpoint
//   export safetensors
//
// Determinism: the same model, seed, data, steps, micro-batch, grad_accum, hyper-parameters and
// OpenBLAS thread count give bitwise the same losses and weights under any plan (all in
// memory, one tier, several, cache on/off, either order, baseline), and a run resumed from a
// checkpoint continues bitwise as if never interrupted. Single rank (a RankShard of ranks=1).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "executor/train/lr_schedule.hpp"

namespace mlpo::train {

struct TrainOptions {
  ModelSpec model;                   // its seq_len is the training sequence length
  std::optional<Plan> plan;          // none: default_plan() under state_dir
  std::string state_dir = "mlpo-state";
  std::string data;                  // token file
  int token_bytes = 2;               // flat token files: 2 (uint16) or 4 (uint32)
  std::int64_t steps = 100;
  int micro_batch = 1;               // sequences per forward/backward
  int grad_accum = 1;                // micro-batches per optimizer step
  std::uint64_t seed = 1;            // model init and data sampling
  LrSchedule lr{1e-3, 1e-4, 0, 0};   // decay_end 0: = steps
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  double max_grad_norm = 1.0;        // <= 0: no clipping
  std::string checkpoint_dir;        // empty: no checkpoints
  std::int64_t checkpoint_every = 0; // 0: only at the end
  bool resume = false;
  std::string export_safetensors;    // empty: no export
  unsigned threads = 0;              // ThreadPool (ops, AdamW); 0 = all cores
  unsigned blas_threads = 0;         // OpenBLAS; 0 = all cores. Part of the determinism contract
  std::string run_name;              // tier subdirectory; default train-<pid>
  // Test hooks (set by mlpo-run from MLPO_TEST_SLOW_CHECKPOINT_MS and MLPO_TRACE_PHASES).
  std::chrono::milliseconds checkpoint_pause{0};
  std::string trace_path;
};

struct TrainEvents {
  std::function<void(const std::string&)> note;  // one-line messages (plan, resume, warnings)
  std::function<void(const Json&)> step;         // each step's log record, when complete
};

struct TrainResult {
  std::vector<Json> steps;
  Json summary;
};

// Throws mlpo::Error (nothing written, no checkpoint touched) for bad input: a missing or
// invalid data file, tokens outside the vocab, a plan for another model, an unreadable
// checkpoint or one of another model, a checkpoint dir that already holds a run without
// --resume; and for I/O errors during the run.
TrainResult train(const TrainOptions& options, const TrainEvents& events);

}  // namespace mlpo::train
