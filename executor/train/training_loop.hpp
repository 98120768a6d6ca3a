#pragma once
// The training loop: pre-training of a LLaMA-style model whose optimizer state lives in the
// offload engine under a plan, on one process or as one of W data-parallel ZeRO-3 ranks.
// One function, train(), reads top to bottom like the algorithm, one call per phase (the
// inputs, the run's objects, the initial state, the steps, the export, the summary):
//
//   check every input (model, plan, data, checkpoint, the launched world against the plan)
//   this rank's shard of fp32 master weights p (offload engine) := checkpoint, or a Hugging
//     Face checkpoint (--init-from, m = v = 0), or hashed init
//   this rank's bf16 weights := round(p)  (one rank: all of them, to the device unless offloaded)
//   for step = first .. steps:
//     for each of this rank's grad_accum micro-batches (global micro-batches r*a .. r*a+a-1):
//       zero the fp32 gradient buffer on the device
//       forward -> loss  (weights acquired part by part from the weight provider)
//       backward with loss scale 1/(W*grad_accum); as each range of the gradient is final
//       (GradientsReady), fold it into the micro-batch tree sum; on the last micro-batch hand
//       the summed range over: bf16 to host (one rank) or fp32 reduce-scatter (ZeRO-3)
//     losses of all micro-batches gathered and summed in global order
//     global gradient norm: chunked square sums of the shard, exchanged (exact) -> clip scale
//     stop (mlpo::Error naming the step) if the loss or the gradient norm is not finite
//     [baseline mode: flush fp32 gradients to the tier]
//     update phase on the shard: AdamW over every subgroup under the plan (fetch, update,
//       write back), lr from the warm-up + cosine schedule, bf16 copy of the new p into the
//       rank's host weights
//     new bf16 weights -> device (resident; each subgroup as soon as it is updated, on a copy
//       queue), or forget the streamed copies
//     every eval_every steps and at the end: validation loss (forward only, fixed held-out set)
//     log the step (rank 0; timings are the slowest rank's); every checkpoint_every steps
//     and at the end: checkpoint (per-rank files + manifest), the step logged once its files
//     are durable, before it is published
//   export safetensors: one file, or a Hugging Face directory (rank 0, gathered, streamed)
//
// Determinism: the same model, seed, data, steps, micro-batch, global micro-batches per step,
// hyper-parameters and OpenBLAS thread count give bitwise the same losses and weights under
// any plan (all in memory, one tier, several, cache on/off, either order, baseline), with
// weights resident or offloaded, on 1, 2, 4, ... (any power of two) ranks, and a run resumed
// from a checkpoint — on any of those world sizes — continues bitwise as if never
// interrupted. Other world sizes are deterministic too, but add the ranks' gradients in a
// tree that differs from one process's in the last bits (docs/comm.md).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "executor/train/internal/lr_schedule.hpp"

namespace mlpo::comm {
class Communicator;
}

namespace mlpo::train {

struct TrainOptions {
  ModelSpec model;           // its seq_len is the training sequence length
  std::optional<Plan> plan;  // none: default_plan() under state_dir
  std::string state_dir = "mlpo-state";
  std::vector<std::string> data;  // token files and directories of them, one data set (token_data.hpp)
  std::string tokenizer;  // the data's SentencePiece model, checked against model and data; "": not given
  std::vector<std::string> eval_data;  // held-out token files (evaluation.hpp); empty: no validation loss
  std::int64_t eval_every = 0;         // validation loss every N steps (0: only after the last step)
  std::int64_t eval_tokens = 0;        // predicted tokens of the held-out set (0: all of eval_data)
  int token_bytes = 2;                 // flat token files: 2 (uint16) or 4 (uint32)
  std::int64_t steps = 100;
  int micro_batch = 1;              // sequences per forward/backward
  int grad_accum = 1;               // micro-batches per optimizer step and rank
  std::uint64_t seed = 1;           // model init and data sampling
  LrSchedule lr{1e-3, 1e-4, 0, 0};  // decay_end 0: = steps
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  std::string weight_decay_on = "matrices";  // matrices (not the norm gains) or all (weight_decay_scope.hpp)
  double max_grad_norm = 1.0;                // <= 0: no clipping
  std::string checkpoint_dir;                // empty: no checkpoints
  std::int64_t checkpoint_every = 0;         // 0: only at the end
  bool resume = false;
  std::string
      export_safetensors;  // empty: no export; *.safetensors: one file; else a HF directory (hf_export.hpp)
  std::string export_dtype = "bf16";                 // directory export: bf16 or fp32 (the master weights)
  std::uint64_t export_shard_bytes = 5'000'000'000;  // directory export: data bytes per shard at most
  std::vector<std::string> export_tokenizer_files;   // directory export: copied beside the weights
  std::string init_from;        // HF LLaMA checkpoint directory: initial weights, fresh optimizer state
  unsigned threads = 0;         // ThreadPool (ops, AdamW); 0 = all cores
  unsigned blas_threads = 0;    // OpenBLAS; 0 = all cores. Part of the determinism contract
  std::string run_name;         // tier subdirectory; default train-<host>-<pid>
  bool param_offload = false;   // one rank: weights in host memory, streamed to the device per part
  std::string backend = "cpu";  // compute backend: cpu, cuda, cuda:N (compute_backend.hpp)
  std::string attention;  // --backend cuda: gemm or fused (kernels/attention_path.hpp); empty: the default
  std::uint64_t gpu_memory_limit = 0;   // bytes the memory check may plan for on the GPU; 0: its free memory
  std::uint64_t host_memory_limit = 0;  // bytes the host memory check plans for; 0: MemAvailable
  comm::Communicator* comm = nullptr;   // the job's ranks (host memory); null: one process
  std::string save_plan;                // without a plan: write the default plan here (mlpo.plan/1)
  // Polled after each step (and before the first): true stops the run there, the step done and
  // logged (and checkpointed when due), no export. Several ranks agree (any rank's request
  // stops all at the same step). Empty: never.
  std::function<bool()> stop_requested;
};

// Called on rank 0 only.
struct TrainEvents {
  std::function<void(const std::string&)> note;  // one-line messages (plan, resume, warnings)
  std::function<void(const Json&)> step;         // each step's log record, when complete
};

struct TrainResult {
  std::vector<Json> steps;
  Json summary;                 // "last_step": the last step done (the checkpoint's on a resume)
  bool interrupted = false;     // stop_requested ended the run before its last step
  std::string last_checkpoint;  // the newest complete checkpoint in --checkpoint-dir, if any
};

// Throws mlpo::Error (nothing written, no checkpoint touched) for bad input: a compute backend
// that cannot be served (no CUDA device: CUDA's reason), a run that does not fit in the GPU's
// memory (bytes needed vs available, and the fix: --param-offload), a missing or
// invalid data file, tokens outside the vocab, a plan for another model or another world
// shape, an unreadable, damaged or edited checkpoint or one of another model, a checkpoint dir
// that already holds a run (any ckpt-*) without --resume, a checkpoint dir without room for a
// checkpoint, an --init-from directory that is not a checkpoint of this model (the tensor and
// the mismatch named), an export directory holding other files; and for I/O errors during the
// run and a step whose loss or gradient norm is not finite (naming the step; thrown before its
// update, so the last checkpoint stays valid). Collective when
// options.comm has several ranks: every rank calls it alike; an error during the steps ends
// the whole job at once through comm.abort_job (before anything waits on a peer), an error
// before them is thrown (run the call inside comm::run_ranked).
TrainResult train(const TrainOptions& options, const TrainEvents& events);

}  // namespace mlpo::train
