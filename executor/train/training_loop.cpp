#include "executor/train/training_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/diagnostics.hpp"
#include "core/accounting.hpp"
#include "core/error.hpp"
#include "core/cpu_ticks.hpp"
#include "core/host_memory.hpp"
#include "core/thread_pool.hpp"
#include "core/units.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/parameter_init.hpp"
#include "executor/model/transformer_model.hpp"
#include "executor/offload/gradient_norm.hpp"
#include "executor/offload/rank_engine.hpp"
#include "executor/offload/tier_run_directories.hpp"
#include "executor/checkpoint/checkpoint.hpp"
#include "executor/checkpoint/checkpoint_directory.hpp"
#include "executor/compute/compute_backend.hpp"
#include "executor/train/internal/default_plan.hpp"
#include "executor/hf/gathered_safetensors.hpp"
#include "executor/compute/gradient_handover.hpp"
#include "executor/hf/hf_checkpoint.hpp"
#include "executor/hf/hf_export.hpp"
#include "executor/compute/micro_batch_gradient_sum.hpp"
#include "executor/train/internal/phase_trace.hpp"
#include "executor/train/internal/rank_weights.hpp"
#include "executor/train/internal/resume_settings.hpp"
#include "executor/train/internal/step_collectives.hpp"
#include "executor/train/internal/step_record.hpp"
#include "executor/train/internal/test_hooks.hpp"
#include "executor/train/internal/train_input_checks.hpp"
#include "executor/train/internal/training_data.hpp"
#include "executor/train/internal/training_host_memory.hpp"
#include "executor/train/internal/weight_decay_scope.hpp"
#include "kernels/cpu/convert.hpp"
#include "core/usable_cores.hpp"

namespace mlpo::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// "1.23 GB/s" (decimal, as the profile's tier rates).
std::string rate_text(double bytes, double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB/s", seconds > 0 ? bytes / seconds / 1e9 : 0.0);
  return text;
}

// Step `step` computed a NaN or infinite loss or gradient norm: the run cannot go on.
Error non_finite_step_error(const TrainOptions& o, std::int64_t step, double loss, double grad_norm) {
  std::string where = "no checkpoint was written (no --checkpoint-dir)";
  if (!o.checkpoint_dir.empty()) {
    const auto newest = checkpoint::newest_checkpoint(o.checkpoint_dir);
    where = newest ? "the last checkpoint, " + newest->string() + ", is untouched: --resume continues from it"
                   : "no checkpoint was written yet";
  }
  return Error("step " + std::to_string(step) + ": the loss is " + std::to_string(loss) +
               " and the gradient norm " + std::to_string(grad_norm) +
               " (not finite); the run stops before updating the weights, and " + where +
               ". Lower --lr (or --max-grad-norm), or check the data");
}

// ---- Inputs ---------------------------------------------------------------------------

// The run's inputs that check_inputs() opens and checks, before anything is written or
// printed: the model, the options, the data, the checkpoint to resume from, the Hugging Face
// checkpoint to start from and the export to end with.
struct RunInputs {
  model::ModelShape shape;
  model::ParameterLayout layout;
  compute::BackendChoice backend_choice;
  WeightDecayScope decay_scope;
  TrainingData data;
  comm::ZeroPartition partition;
  std::optional<checkpoint::Checkpoint> checkpoint;  // --resume, when there is one
  std::optional<hf::HfCheckpoint> init;              // --init-from, unless there is a checkpoint
  hf::HfExportOptions hf_export;
  bool export_file = false;  // --export-safetensors names one .safetensors file (else a directory)
};

// The checkpoint to continue from (--resume; none yet is a note, not an error), after checking
// the directory: without --resume it must hold no checkpoint, and either way it must have room
// for one more beside the last, so a full disk is an error now, not at step N.
std::optional<checkpoint::Checkpoint> open_checkpoint(const TrainOptions& o,
                                                      const model::ParameterLayout& layout,
                                                      const comm::ZeroPartition& partition,
                                                      const Diagnostics& input_diagnostics) {
  std::optional<checkpoint::Checkpoint> checkpoint;
  if (o.checkpoint_dir.empty()) return checkpoint;
  const std::int64_t params = layout.total();
  const RankShard& mine = partition.mine();
  if (o.resume) {
    // Each rank checks the state files it will read; rank 0 also the weights file.
    checkpoint = checkpoint::Checkpoint::open_latest(
        o.checkpoint_dir, o.model, params, {mine.global_begin, mine.global_end(), partition.rank() == 0});
    if (!checkpoint)
      input_diagnostics.note("checkpoint",
                             "resume: no checkpoint in " + o.checkpoint_dir + " yet; starting from step 0");
  } else {
    checkpoint::expect_no_checkpoints(o.checkpoint_dir);  // any ckpt-*, not only `latest`
  }
  if (!checkpoint || checkpoint->position().step < o.steps)
    checkpoint::check_checkpoint_space(
        o.checkpoint_dir, checkpoint::checkpoint_bytes(
                              params, static_cast<std::int64_t>(layout.entries().size()), partition.ranks()));
  return checkpoint;
}

// Whether the export is one .safetensors file (bf16 only); a Hugging Face directory is checked
// here (hf_export.hpp).
bool check_export(const TrainOptions& o, const hf::HfExportOptions& hf_export) {
  const bool export_file = !o.export_safetensors.empty() && hf::exports_single_file(o.export_safetensors);
  if (!o.export_safetensors.empty() && !export_file) hf::check_hf_export(hf_export);
  if (export_file && (o.export_dtype != "bf16" || !o.export_tokenizer_files.empty()))
    throw Error("--export-safetensors " + o.export_safetensors +
                ": one .safetensors file holds bf16 weights only; for "
                "--export-dtype or --export-tokenizer name a directory (a path not ending in .safetensors)");
  return export_file;
}

// Notes about the inputs go to `input_diagnostics`, printed once every input is checked, so bad
// input prints one line; `diagnostics` prints at once.
RunInputs check_inputs(const TrainOptions& o, comm::Communicator& job, const Diagnostics& input_diagnostics,
                       const Diagnostics& diagnostics) {
  comm::Communicator& comm = job.host_side();
  validate(o.model);
  const model::ModelShape shape = model::shape_of(o.model);
  model::ParameterLayout layout(shape);
  compute::BackendChoice backend_choice = compute::parse_backend(o.backend, "--backend");
  if (!o.attention.empty()) {
    backend_choice.attention = parse_attention_path(o.attention, "--attention");
    if (backend_choice.kind != compute::BackendChoice::Kind::cuda)
      throw Error("--attention " + o.attention +
                  ": chooses the GPU's attention kernels, and this run trains on the CPU backend (one "
                  "implementation); drop --attention, or train with --backend cuda");
  }
  const WeightDecayScope decay_scope = parse_weight_decay_scope(o.weight_decay_on, "--weight-decay-on");
  check_train_options(o, job, backend_choice);
  TrainingData data = open_training_data(o);
  comm::ZeroPartition partition(layout.total(), comm.size(), comm.rank());
  std::optional<checkpoint::Checkpoint> checkpoint = open_checkpoint(o, layout, partition, input_diagnostics);
  // A Hugging Face checkpoint to start from: config.json and every tensor checked here; a
  // checkpoint of this run, when there is one, takes precedence (a restarted --init-from run).
  std::optional<hf::HfCheckpoint> init;
  if (!o.init_from.empty()) {
    if (checkpoint)
      diagnostics.note("--init-from", "resume: --init-from " + o.init_from +
                                          " is not read; the run continues from its checkpoint");
    else
      init.emplace(o.init_from, o.model);
  }
  hf::HfExportOptions hf_export{o.export_safetensors, o.export_dtype, o.export_shard_bytes,
                                o.export_tokenizer_files, o.tokenizer};
  const bool export_file = check_export(o, hf_export);
  return RunInputs{shape,
                   std::move(layout),
                   backend_choice,
                   decay_scope,
                   std::move(data),
                   std::move(partition),
                   std::move(checkpoint),
                   std::move(init),
                   std::move(hf_export),
                   export_file};
}

// One line for the export: where, which files, how large, which dtype — and, for a byte-level
// model (no SentencePiece model given), that no tokenizer travels with it.
std::string export_line(const TrainOptions& o, bool single_file) {
  std::string line = "export: " + hf::describe_export(o.export_safetensors, single_file,
                                                      single_file ? std::string("bf16") : o.export_dtype);
  const bool tokenizer = !o.tokenizer.empty() || !o.export_tokenizer_files.empty();
  if (!tokenizer)
    line += "; no tokenizer: the model is byte-level (token ids are the bytes of UTF-8 text, vocab " +
            std::to_string(o.model.vocab) + ")";
  return line;
}

// A plan tuned for another micro-batch, sequence length or accumulation: it still runs (the
// placement does not depend on them), but its predicted times are for the other shape.
std::optional<std::string> plan_shape_warning(const TrainOptions& o, const Plan& plan) {
  if (!plan.prediction) return std::nullopt;
  const ClusterShape& c = plan.cluster;
  std::string differs;
  auto compare = [&](const char* flag, std::int64_t planned, std::int64_t run) {
    if (planned > 0 && planned != run)
      differs += std::string(differs.empty() ? "" : ", ") + flag + " " + std::to_string(run) +
                 " (the plan's " + std::to_string(planned) + ")";
  };
  compare("--micro-batch", c.micro_batch, o.micro_batch);
  compare("--seq-len", c.seq_len, o.model.seq_len);
  compare("--grad-accum", c.grad_accum, o.grad_accum);
  if (differs.empty()) return std::nullopt;
  return "warning: the plan was tuned for another shape: " + differs +
         "; it runs, but its predicted times (and mlpo-tune --validate against them) no longer apply; "
         "re-tune with mlpo-tune --micro-batch " +
         std::to_string(o.micro_batch) + " --seq-len " + std::to_string(o.model.seq_len) + " --grad-accum " +
         std::to_string(o.grad_accum);
}

// The plan the run follows: --plan, or the default plan (one disk tier under --state-dir,
// which it creates) for the launched shape; checked against the options and, collectively,
// against the launched world (every rank stops alike on a mismatch).
Plan run_plan(const TrainOptions& o, std::int64_t params, comm::Communicator& comm,
              const Diagnostics& input_diagnostics) {
  Plan plan = o.plan ? *o.plan : default_plan(o.model, params, o.state_dir);  // creates state_dir
  if (!o.plan) {
    plan.cluster.nodes = comm.nodes();  // the default plan takes the launched shape
    plan.cluster.ranks_per_node = comm.local_size();
    for (const std::string& line : default_plan_summary(plan)) input_diagnostics.note("plan", line);
    if (!o.save_plan.empty()) {
      if (comm.rank() == 0) save_plan(plan, o.save_plan);
      input_diagnostics.note(
          "plan", "plan: written to " + o.save_plan + " (edit it, or pass it to mlpo-tune --simulate)");
    }
  } else if (const auto warning = plan_shape_warning(o, plan)) {
    input_diagnostics.warning("plan", *warning);
  }
  check_train_plan(o, plan, params);
  comm::check_world_matches(comm, plan.cluster);  // collective: every rank stops alike on a mismatch
  if (comm.size() > 1 && (comm.size() & (comm.size() - 1)) != 0)
    input_diagnostics.note(
        "ranks",
        "note: " + std::to_string(comm.size()) +
            " ranks is not a power of two: the run is deterministic, but its gradient "
            "sums differ in the last bits from runs with 1, 2, 4, ... ranks (docs/comm.md, \"Determinism "
            "of reductions\")");
  return plan;
}

// Whether the run fits in host memory — the CPU backend's model, the host weights and gradients,
// the offload engine — checked before anything large is allocated; the line to note.
std::string check_run_host_memory(const TrainOptions& o, const RunInputs& in,
                                  const compute::TrainingFootprint& footprint, const Plan& plan,
                                  const comm::Communicator& comm) {
  const RankShard& mine = in.partition.mine();
  const offload::HostMemoryNeed need = training_host_memory(
      in.shape, footprint, plan, mine, in.backend_choice.kind == compute::BackendChoice::Kind::cpu);
  const std::string run = o.run_name.empty() ? offload::default_run_name() : o.run_name;
  const std::optional<HostMemoryAvailable> available =
      host_memory_for_run(plan, mine, run, o.host_memory_limit);
  if (!available)
    return "warning: /proc/meminfo has no MemAvailable; host memory is not checked (the run needs " +
           format_bytes(static_cast<double>(need.total())) + " per rank)";
  return check_training_host_memory(need, comm.local_size(), *available,
                                    "rank " + std::to_string(comm.rank()));
}

LrSchedule lr_schedule(const TrainOptions& o) {
  LrSchedule lr = o.lr;
  if (lr.decay_end <= 0) lr.decay_end = o.steps;
  validate(lr);
  return lr;
}

// ---- Initial state: fp32 master p (+ m, v) in the engine; bf16 weights = round(p) -----

// From this run's checkpoint: p, m, v of this rank's range; returns where the run stands.
checkpoint::TrainingPosition resume_state(checkpoint::Checkpoint& checkpoint, const TrainOptions& o,
                                          const Json& settings, offload::UpdatePipeline& pipeline,
                                          const RankShard& mine, std::span<bf16> weights,
                                          const Diagnostics& diagnostics) {
  const checkpoint::TrainingPosition pos = checkpoint.position();
  for (const std::string& line : checkpoint.notes()) diagnostics.note("checkpoint", line);
  if (pos.seed != o.seed)
    diagnostics.note("checkpoint", "resume: using the checkpoint's seed " + std::to_string(pos.seed) +
                                       " (--seed " + std::to_string(o.seed) + " ignored)");
  for (const std::string& warning : resume_setting_warnings(settings, checkpoint.settings()))
    diagnostics.warning("checkpoint", warning);
  // Streams like the write: one subgroup at a time from the files into its tier.
  const auto t0 = Clock::now();
  pipeline.load_state([&](const Subgroup& sg, float* p, float* m, float* v) {
    checkpoint.read_state(mine.global_begin + sg.begin, sg.elements, p, m, v);
    fp32_to_bf16(p, weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
  });
  const double load_s = seconds_since(t0);
  const double state_bytes = 12.0 * static_cast<double>(mine.elements);
  diagnostics.note("checkpoint", "checkpoint: loaded " + format_bytes(state_bytes) +
                                     " of optimizer state in " + format_seconds(load_s) + " (" +
                                     rate_text(state_bytes, load_s) + ")");
  diagnostics.note("checkpoint", "resume: continuing from " + checkpoint.path() + " (step " +
                                     std::to_string(pos.step) + ", written by " +
                                     std::to_string(checkpoint.ranks()) +
                                     (checkpoint.ranks() == 1 ? " rank" : " ranks") + ")");
  return pos;
}

// From a Hugging Face checkpoint (--init-from): each rank streams its own range, tensor by
// tensor, into its subgroups' homes; m = v = 0.
void load_hf_weights(hf::HfCheckpoint& init, const TrainOptions& o, offload::UpdatePipeline& pipeline,
                     const RankShard& mine, std::span<bf16> weights, const Diagnostics& diagnostics) {
  pipeline.load_state([&](const Subgroup& sg, float* p, float*, float*) {
    init.read(mine.global_begin + sg.begin, sg.elements, p);
    fp32_to_bf16(p, weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
  });
  diagnostics.note("--init-from",
                   "init: weights from " + o.init_from + " (" + init.dtypes() + "), fresh optimizer state");
}

// A fresh run: each element's initial value is a pure function of (seed, index), hashed on
// every core (billions of parameters would take minutes on one); m = v = 0.
void load_initial_values(const model::ParameterLayout& layout, std::uint64_t seed,
                         offload::UpdatePipeline& pipeline, const RankShard& mine, std::span<bf16> weights,
                         ThreadPool& threads, const Diagnostics& diagnostics) {
  // A large state takes minutes to write: once it has taken 2 s, say what is being written and
  // then every tenth of it; in any case one line at the end with the throughput.
  const auto t0 = std::chrono::steady_clock::now();
  const double total = static_cast<double>(mine.elements);
  const std::string what = format_bytes(total * kOptimizerStateBytes) + " of p, m, v";
  double done = 0;  // load_state calls back on this thread, one subgroup after the other
  int tenths = 0;
  bool announced = false;
  pipeline.load_state([&](const Subgroup& sg, float* p, float*, float*) {
    threads.parallel_for(
        static_cast<std::size_t>(sg.elements), 4096, [&](std::size_t begin, std::size_t end) {
          model::initial_values(layout, seed, mine.global_begin + sg.begin + static_cast<std::int64_t>(begin),
                                std::span<float>(p + begin, end - begin));
          fp32_to_bf16(p + begin, weights.data() + sg.begin + static_cast<std::int64_t>(begin), end - begin);
        });
    done += static_cast<double>(sg.elements);
    if (!announced && seconds_since(t0) >= 2.0) {
      diagnostics.progress("init",
                           "init: writing the initial optimizer state (" + what + ") to the plan's tiers");
      announced = true;
    }
    if (announced && total > 0 && done / total * 10 >= tenths + 1 && done < total) {
      tenths = static_cast<int>(done / total * 10);
      diagnostics.progress("init", "init: " + std::to_string(tenths * 10) + " %");
    }
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char line[200];
  std::snprintf(line, sizeof line, "init: wrote the initial optimizer state (%s) in %s (%.2f GB/s)",
                what.c_str(), format_seconds(s).c_str(),
                s > 0 ? total * kOptimizerStateBytes / s / 1e9 : 0.0);
  diagnostics.note("init", line);
}

// ---- One step -------------------------------------------------------------------------

struct ComputeTimes {
  double forward_s = 0, backward_s = 0;
};

// Forward and backward of a step on this rank. Rank r runs the global micro-batches
// r*a .. r*a+a-1 of each step (a = grad_accum), drawing the sequences one process would draw
// for them; gradients are means over all of them, tree-summed in fp32 over the rank's
// micro-batches (unless the model streams them out, a = 1) and handed over after the last.
class RankMicroBatches {
 public:
  RankMicroBatches(const TrainOptions& o, const data::TokenData& data, int ranks, int rank, Backend& backend,
                   model::TransformerModel& model, compute::GradientHandover& grads, bool streamed_gradients)
      : data_(data),
        backend_(backend),
        model_(model),
        grads_(grads),
        rank_(rank),
        a_(o.grad_accum),
        global_micro_batches_(static_cast<std::int64_t>(ranks) * a_),
        loss_scale_(1.0f / static_cast<float>(global_micro_batches_)),
        T_(o.model.seq_len),
        B_(o.micro_batch) {
    if (!streamed_gradients) gradient_sum_.emplace(backend, model.gradients(), a_);
    inputs_.resize(static_cast<std::size_t>(B_ * T_));
    targets_.resize(inputs_.size());
    losses_.resize(static_cast<std::size_t>(a_));
  }

  // The step whose sequences start at `pos`; each micro-batch's loss in losses().
  ComputeTimes run(const checkpoint::TrainingPosition& pos) {
    ComputeTimes times;
    for (int j = 0; j < a_; ++j) {
      const std::int64_t g = static_cast<std::int64_t>(rank_) * a_ + j;  // global micro-batch
      for (std::int64_t b = 0; b < B_; ++b)
        data_.sequence(
            pos.seed, pos.data_position + g * B_ + b,
            std::span(inputs_).subspan(static_cast<std::size_t>(b * T_), static_cast<std::size_t>(T_)),
            std::span(targets_).subspan(static_cast<std::size_t>(b * T_), static_cast<std::size_t>(T_)));
      model_.zero_gradients();
      auto t0 = Clock::now();
      losses_[static_cast<std::size_t>(j)] = model_.forward(inputs_, targets_);
      times.forward_s += seconds_since(t0);
      t0 = Clock::now();
      model_.backward(loss_scale_, [&](const model::GradientSegment& seg) {
        const Tensor summed = gradient_sum_ ? gradient_sum_->add(j, seg.range) : seg.gradient;
        if (j == a_ - 1) grads_.range_final(seg.range, summed);
      });
      backend_.synchronize();  // a GPU enqueues asynchronously: time the ops, not their launch
      times.backward_s += seconds_since(t0);
    }
    return times;
  }

  std::span<const double> losses() const { return losses_; }
  std::int64_t global_micro_batches() const { return global_micro_batches_; }
  // Sequences per step over all ranks, and their tokens.
  std::int64_t sequences() const { return global_micro_batches_ * B_; }
  double tokens() const { return static_cast<double>(B_ * T_ * global_micro_batches_); }

 private:
  const data::TokenData& data_;
  Backend& backend_;
  model::TransformerModel& model_;
  compute::GradientHandover& grads_;
  const int rank_, a_;
  const std::int64_t global_micro_batches_;
  const float loss_scale_;
  const std::int64_t T_, B_;
  std::optional<compute::MicroBatchGradientSum>
      gradient_sum_;  // none when the gradients are streamed (a = 1)
  std::vector<std::int32_t> inputs_, targets_;
  std::vector<double> losses_;
};

// The step's loss and global gradient norm, the same values on every rank.
class StepReductions {
 public:
  StepReductions(StepCollectives& collectives, std::int64_t params, std::int64_t global_micro_batches)
      : collectives_(collectives),
        global_micro_batches_(global_micro_batches),
        all_losses_(static_cast<std::size_t>(global_micro_batches)),
        chunk_sums_(static_cast<std::size_t>((params + kNormChunk - 1) / kNormChunk)) {}

  // Every micro-batch's loss, added in global order as one process does, over their count.
  double loss(std::span<const double> my_losses) {
    collectives_.all_gather(my_losses, std::span<double>(all_losses_));
    double loss = 0;
    for (double x : all_losses_) loss += x;
    return loss / static_cast<double>(global_micro_batches_);
  }

  // Fixed chunks, which never straddle ranks; each rank fills its own chunks, the others stay
  // 0, so the sum over ranks is exact.
  double gradient_norm(std::span<const bf16> shard, std::int64_t global_begin, ThreadPool& threads) {
    std::fill(chunk_sums_.begin(), chunk_sums_.end(), 0.0);
    const auto my_sums = offload::chunk_square_sums(shard, threads);
    std::copy(my_sums.begin(), my_sums.end(), chunk_sums_.begin() + global_begin / kNormChunk);
    collectives_.all_reduce_sum(std::span<double>(chunk_sums_));
    return offload::global_norm(chunk_sums_);
  }

 private:
  StepCollectives& collectives_;
  const std::int64_t global_micro_batches_;
  std::vector<double> all_losses_, chunk_sums_;
};

// ---- The run ----------------------------------------------------------------------------

// The objects of one run once its inputs are checked — tier directories, offload engine,
// the rank's bf16 weights, the gradient and weight exchanges, the model — and the phases over
// them. Members are declared in the order they are built: owners of buffers that queued
// exchanges touch come before the exchange, so they outlive its worker.
class TrainingRun {
 public:
  TrainingRun(const TrainOptions& o, const TrainEvents& events, comm::Communicator& job, RunInputs& in,
              ThreadPool& threads, compute::ComputeBackend& device, const Plan& plan, const LrSchedule& lr,
              unsigned blas_threads, const compute::TrainingFootprint& footprint)
      : o_(o),
        events_(events),
        job_(job),
        comm_(job.host_side()),
        ranks_(comm_.size()),
        rank_(comm_.rank()),
        in_(in),
        mine_(in.partition.mine()),
        threads_(threads),
        device_(device),
        backend_(*device.backend),
        plan_(plan),
        lr_(lr),
        footprint_(footprint),
        run_(o.run_name.empty() ? offload::default_run_name() : o.run_name),
        run_dirs_(plan, run_),
        engine_(plan, mine_, run_, threads),
        pipeline_(engine_.pipeline()),
        settings_(resume_settings(o, lr, blas_threads, in.data.train, ranks_)),
        hooks_(train_test_hooks()),
        trace_(hooks_.trace_path, ranks_, rank_),
        // Host memory from the backend (pinned on a GPU), so weight copies overlap compute and update.
        weights_owner_(backend_.allocate_host(static_cast<std::size_t>(mine_.elements) * sizeof(bf16))),
        weights_(static_cast<bf16*>(weights_owner_.data()), static_cast<std::size_t>(mine_.elements)),
        exchange_(ranks_ > 1 ? std::make_unique<comm::LayerExchange>(comm_, in.partition) : nullptr),
        grads_(backend_, in.layout, in.partition, exchange_.get()),
        // Gathered from the shards (ZeRO-3), streamed from host memory (--param-offload) or resident.
        model_weights_(backend_, in.layout, weights_, exchange_.get(), footprint),
        model_(backend_, in.shape, {o.micro_batch, DType::bf16, compute::streams_gradients(footprint)},
               model_weights_.provider()) {
    pipeline_.set_weight_decay_mask(weight_decay_mask(in.decay_scope, in.layout, mine_));
  }

  void note(const std::string& line) const {
    if (rank_ == 0 && events_.note) events_.note(line);
  }

  // p (+ m, v) of this rank's shard from the checkpoint, the Hugging Face weights or the
  // seed; the bf16 weights round(p) to the device.
  void load_initial_state() {
    const Diagnostics diagnostics([this](const Diagnostic& d) { note(d.text); });
    if (in_.checkpoint)
      pos_ = resume_state(*in_.checkpoint, o_, settings_, pipeline_, mine_, weights_, diagnostics);
    else if (in_.init)
      load_hf_weights(*in_.init, o_, pipeline_, mine_, weights_, diagnostics);
    else
      load_initial_values(in_.layout, o_.seed, pipeline_, mine_, weights_, threads_, diagnostics);
    model_weights_.upload_all();
    trace_.mark("started " + std::to_string(pos_.step));
  }

  // The working memory of the steps, after the initial state is loaded.
  void prepare_steps() {
    micro_batches_.emplace(o_, in_.data.train, ranks_, rank_, backend_, model_, grads_,
                           compute::streams_gradients(footprint_));
    collectives_.emplace(job_, backend_);
    reductions_.emplace(*collectives_, in_.layout.total(), micro_batches_->global_micro_batches());
    if (in_.data.validation)
      note("eval: validation loss on " + in_.data.validation->description() +
           (o_.eval_every > 0 ? " every " + std::to_string(o_.eval_every) + " steps and" : std::string()) +
           " after the last step");
    first_step_ = pos_.step + 1;
  }

  // The steps, until the last or until a stop is requested (then false: the run was interrupted).
  bool run_steps() {
    for (std::int64_t step = first_step_; step <= o_.steps; ++step) {
      if (stop_requested()) return false;
      run_step(step);
    }
    if (first_step_ > o_.steps)
      note("resume: the checkpoint is already at step " + std::to_string(pos_.step) + "; nothing to train");
    return true;
  }

  // The final weights: one safetensors file, or a Hugging Face directory.
  void export_weights() {
    const std::map<std::string, std::string> export_metadata{{"format", "pt"},
                                                             {"step", std::to_string(pos_.step)}};
    if (in_.export_file)
      hf::export_safetensors(comm_, in_.partition, weights_, in_.layout, export_metadata,
                             o_.export_safetensors);
    else if (!o_.export_safetensors.empty())
      hf::export_hf_directory(comm_, in_.partition, in_.layout, o_.model, weights_, pipeline_,
                              export_metadata, in_.hf_export);
    if (!o_.export_safetensors.empty()) note(export_line(o_, in_.export_file));
  }

  TrainResult finish(double seconds) {
    TrainResult result;
    result.summary = Json{{"steps", static_cast<std::int64_t>(steps_.size())},
                          {"first_step", first_step_},
                          {"last_step", pos_.step},
                          {"params", in_.layout.total()},
                          {"ranks", ranks_},
                          {"backend", device_.description},
                          {"param_offload", o_.param_offload},
                          {"mode", to_string(plan_.mode)},
                          {"tokens", tokens_total_},
                          {"tokens_per_s", seconds_total_ > 0 ? tokens_total_ / seconds_total_ : 0.0},
                          {"seconds", seconds},
                          {"checkpoints", checkpoints_},
                          {"optimizer_state_bytes", in_.layout.total() * kOptimizerStateBytes},
                          {"peak_rss_bytes", peak_rss_bytes()}};
    if (const auto total = meminfo_bytes("MemTotal")) result.summary["host_memory_bytes"] = *total;
    if (!steps_.empty()) {
      result.summary["first_loss"] = steps_.front()["loss"];
      result.summary["last_loss"] = steps_.back()["loss"];
      if (steps_.back().contains("eval_loss")) result.summary["last_eval_loss"] = steps_.back()["eval_loss"];
    }
    if (!o_.export_safetensors.empty()) result.summary["export"] = o_.export_safetensors;
    if (in_.init) result.summary["init_from"] = o_.init_from;
    trace_.mark("finished " + std::to_string(pos_.step));
    result.steps = std::move(steps_);
    return result;
  }

 private:
  // What one step measured on its way, for its log record.
  struct StepMeasures {
    Clock::time_point start;
    std::optional<CpuTicks> cpu0;
    std::optional<comm::ExchangeTotals> exchange0, exchange1;  // around forward and backward
    ComputeTimes times;
    double gradient_wait_s = 0;  // the gradient copies that did not overlap backward
    double loss = 0, grad_norm = 0;
    AdamWParams adam;
    offload::UpdateStats upd;
    double weights_s = 0;
    std::optional<double> eval_loss;
    double eval_s = 0;
  };

  void run_step(std::int64_t step) {
    StepMeasures m{Clock::now(), read_cpu_ticks()};
    trace_.mark("step-begin " + std::to_string(step));
    compute_gradients(step, m);
    update_shard(step, m);

    // New weights back to the compute device.
    const auto t0 = Clock::now();
    model_weights_.after_update();
    m.weights_s = seconds_since(t0);
    pos_.step = step;

    evaluate(step, m);
    // Collective; with a checkpoint due, called inside its write.
    auto log_step = [&](double checkpoint_s, std::int64_t checkpoint_bytes) {
      log_step_record(step, m, checkpoint_s, checkpoint_bytes);
    };
    const bool due = (o_.checkpoint_every > 0 && step % o_.checkpoint_every == 0) || step == o_.steps;
    if (!o_.checkpoint_dir.empty() && due)
      save_checkpoint(log_step);
    else
      log_step(0, 0);
  }

  // Forward and backward over this rank's micro-batches; gradients tree-summed in fp32. Then the
  // step's loss and global gradient norm: the same values on every rank, so every rank stops
  // alike, before the update could write a non-finite state (the last checkpoint stays the one
  // to resume from).
  void compute_gradients(std::int64_t step, StepMeasures& m) {
    m.exchange0 = exchange_totals();
    m.times = micro_batches_->run(pos_);
    const auto t0 = Clock::now();
    grads_.finish();  // the exchange is idle from here: direct collectives are allowed
    m.gradient_wait_s = seconds_since(t0);
    m.exchange1 = exchange_totals();
    pos_.data_position += micro_batches_->sequences();

    m.loss = reductions_->loss(micro_batches_->losses());
    m.grad_norm = reductions_->gradient_norm(grads_.shard(), mine_.global_begin, threads_);
    if (!std::isfinite(m.loss) || !std::isfinite(m.grad_norm))
      throw non_finite_step_error(o_, step, m.loss, m.grad_norm);
    if (plan_.gradients == GradientPolicy::flush_fp32) pipeline_.flush_gradients(grads_.shard());  // baseline
    m.times.backward_s += seconds_since(t0);
  }

  // Update phase on this rank's shard: AdamW over every subgroup, wherever it lives.
  void update_shard(std::int64_t step, StepMeasures& m) {
    m.adam = AdamWParams{lr_.at(step), o_.beta1,        o_.beta2,
                         o_.eps,       o_.weight_decay, offload::clip_scale(m.grad_norm, o_.max_grad_norm),
                         step};
    trace_.mark("update-begin " + std::to_string(step));
    model_weights_.before_update();  // the update rewrites the host weights
    m.upd = pipeline_.update(engine_.plan_iteration(step - 1), grads_.shard(), m.adam, weights_,
                             model_weights_.on_subgroup_updated());
    trace_.mark("update-end " + std::to_string(step));
  }

  // Validation loss of the new weights (not part of step_s): forward only, the optimizer and
  // the data position untouched.
  void evaluate(std::int64_t step, StepMeasures& m) {
    if (!in_.data.validation || !evaluation_due(o_.eval_every, step, o_.steps)) return;
    const auto t0 = Clock::now();
    m.eval_loss = in_.data.validation->loss(model_, *collectives_, rank_, ranks_);
    m.eval_s = seconds_since(t0);
  }

  // The step as the job saw it: times of the slowest rank, counts summed over ranks. Collective.
  void log_step_record(std::int64_t step, const StepMeasures& m, double checkpoint_s,
                       std::int64_t checkpoint_bytes) {
    const double tokens = micro_batches_->tokens();
    StepTimes mine{seconds_since(m.start) - m.eval_s,
                   m.times.forward_s,
                   m.times.backward_s,
                   m.weights_s,
                   checkpoint_s,
                   m.gradient_wait_s,
                   checkpoint_bytes,
                   steal_share(m.cpu0, read_cpu_ticks())};
    if (m.exchange0 && m.exchange1) {
      mine.exchange_cpu_s = m.exchange1->thread_cpu_s - m.exchange0->thread_cpu_s;
      mine.gather_wait_s = m.exchange1->gather_wait_s - m.exchange0->gather_wait_s;
    }
    const StepRecord record =
        step_record({step, m.loss, m.adam.lr, m.grad_norm, m.adam.grad_scale, tokens, m.eval_loss, m.eval_s},
                    mine, m.upd, model_weights_.fetches_since_last_call(), *collectives_);
    tokens_total_ += tokens;
    seconds_total_ += *record.step_s;
    Json rec = to_json(record);
    if (rank_ == 0 && events_.step) events_.step(rec);
    steps_.push_back(std::move(rec));
  }

  // Whether to stop before the next step; with several ranks, any rank's request stops them all.
  bool stop_requested() {
    double stop = o_.stop_requested && o_.stop_requested() ? 1.0 : 0.0;
    if (ranks_ > 1) comm_.all_reduce_max(std::span<double>(&stop, 1));
    return stop > 0;
  }

  // The rank's exchange totals so far (ZeRO-3 ranks only).
  std::optional<comm::ExchangeTotals> exchange_totals() const {
    if (!exchange_) return std::nullopt;
    return exchange_->totals();
  }

  // Writes the checkpoint of the step just done; `log_step(checkpoint_s, bytes)` logs the step once
  // its files are durable but before the checkpoint is published, so a kill never leaves a
  // published step without its log line (RunLog drops the lines of unpublished steps).
  void save_checkpoint(const std::function<void(double, std::int64_t)>& log_step) {
    const auto c0 = Clock::now();
    trace_.mark("checkpoint-begin " + std::to_string(pos_.step));
    checkpoint::CheckpointWriteOptions write{
        hooks_.checkpoint_pause, [&](const checkpoint::CheckpointWriteStats& stats) {
          log_step(seconds_since(c0), static_cast<std::int64_t>(stats.bytes));
        }};
    checkpoint::write_checkpoint(comm_, o_.checkpoint_dir, o_.model, in_.layout, in_.partition, weights_,
                                 pipeline_, pos_, settings_, write);
    trace_.mark("checkpoint-end " + std::to_string(pos_.step));
    ++checkpoints_;
  }

  const TrainOptions& o_;
  const TrainEvents& events_;
  comm::Communicator& job_;   // the step's reductions (NCCL with GPU buffers)
  comm::Communicator& comm_;  // host-memory collectives
  const int ranks_, rank_;
  RunInputs& in_;
  const RankShard& mine_;
  ThreadPool& threads_;
  compute::ComputeBackend& device_;
  Backend& backend_;
  const Plan& plan_;
  const LrSchedule& lr_;
  const compute::TrainingFootprint footprint_;
  const std::string run_;
  offload::TierRunDirectories run_dirs_;
  offload::RankEngine engine_;
  offload::UpdatePipeline& pipeline_;
  const Json settings_;
  const TrainTestHooks hooks_;
  PhaseTrace trace_;
  // This rank's bf16 weights (all of them on one rank): what the update phase writes and the
  // weight provider reads.
  HostBuffer weights_owner_;
  const std::span<bf16> weights_;
  std::unique_ptr<comm::LayerExchange> exchange_;
  compute::GradientHandover grads_;
  RankWeights model_weights_;
  model::TransformerModel model_;
  checkpoint::TrainingPosition pos_{0, o_.seed, 0};
  // The steps' working memory (prepare_steps).
  std::optional<RankMicroBatches> micro_batches_;
  std::optional<StepCollectives> collectives_;
  std::optional<StepReductions> reductions_;
  std::int64_t first_step_ = 1;
  std::vector<Json> steps_;  // each step's log record
  double tokens_total_ = 0, seconds_total_ = 0;
  std::int64_t checkpoints_ = 0;
};

}  // namespace

TrainResult train(const TrainOptions& o, const TrainEvents& events) {
  comm::SingleProcessCommunicator one_process;
  comm::Communicator& job = o.comm ? *o.comm : one_process;  // NCCL: the step's reductions
  comm::Communicator& comm = job.host_side();                // host-memory collectives
  // Every diagnostic to events.note, as the line mlpo-run prints (its text), from rank 0.
  const Diagnostics diagnostics([&](const Diagnostic& d) {
    if (comm.rank() == 0 && events.note) events.note(d.text);
  });
  const auto run_start = Clock::now();

  // ---- Inputs, all checked before anything is written or printed ----------------------
  // Notes about the inputs wait until every input is checked, so bad input prints one line.
  std::vector<Diagnostic> input_notes;
  const Diagnostics input_diagnostics = collect_diagnostics(input_notes);
  RunInputs in = check_inputs(o, job, input_diagnostics, diagnostics);
  // The compute device, and whether the run fits in its memory: both before anything is written.
  ThreadPool threads(o.threads);
  const unsigned blas_threads = o.blas_threads ? o.blas_threads : usable_cores();
  compute::ComputeBackend device =
      compute::open_backend(in.backend_choice, threads, blas_threads, comm.local_rank());
  const compute::TrainingFootprint footprint{o.micro_batch, o.grad_accum, comm.size(), o.param_offload};
  if (const auto line = compute::check_training_memory(device, in.shape, footprint, o.gpu_memory_limit))
    input_diagnostics.note("device memory", *line);
  const Plan plan = run_plan(o, in.layout.total(), comm, input_diagnostics);
  input_diagnostics.note("host memory", check_run_host_memory(o, in, footprint, plan, comm));
  const LrSchedule lr = lr_schedule(o);
  for (const Diagnostic& d : input_notes) diagnostics.report(d);

  // ---- Compute device, model and offload engine; the initial state --------------------
  TrainingRun run(o, events, job, in, threads, device, plan, lr, blas_threads, footprint);
  run.load_initial_state();
  run.prepare_steps();

  // ---- The steps, then the export -------------------------------------------------------
  // From here on, with several ranks, an error ends the job at once (abort_job) while every
  // object a queued exchange may still touch is alive: unwinding first would destroy them and
  // could wait forever on a peer that is blocked in a collective.
  bool completed = false;
  try {
    completed = run.run_steps();
    if (completed) run.export_weights();
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort_job(e.what());
    throw;
  }
  TrainResult result = run.finish(seconds_since(run_start));
  result.interrupted = !completed;
  if (const auto newest =
          o.checkpoint_dir.empty() ? std::nullopt : checkpoint::newest_checkpoint(o.checkpoint_dir))
    result.last_checkpoint = newest->string();
  return result;
}

}  // namespace mlpo::train
