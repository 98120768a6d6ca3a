#include "executor/train/training_loop.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_init.hpp"
#include "executor/model/transformer_model.hpp"
#include "executor/offload/gradient_norm.hpp"
#include "executor/offload/rank_engine.hpp"
#include "executor/offload/tier_run_directories.hpp"
#include "executor/train/checkpoint.hpp"
#include "executor/train/checkpoint_directory.hpp"
#include "executor/train/compute_backend.hpp"
#include "executor/train/default_plan.hpp"
#include "executor/train/gathered_safetensors.hpp"
#include "executor/train/gradient_handover.hpp"
#include "executor/train/hf_checkpoint.hpp"
#include "executor/train/hf_export.hpp"
#include "executor/train/micro_batch_gradient_sum.hpp"
#include "executor/train/phase_trace.hpp"
#include "executor/train/rank_weights.hpp"
#include "executor/train/resume_settings.hpp"
#include "executor/train/spec_shape.hpp"
#include "executor/train/step_collectives.hpp"
#include "executor/train/step_record.hpp"
#include "executor/train/train_input_checks.hpp"
#include "executor/train/training_data.hpp"
#include "executor/train/weight_decay_scope.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Step `step` computed a NaN or infinite loss or gradient norm: the run cannot go on.
Error non_finite_step_error(const TrainOptions& o, std::int64_t step, double loss, double grad_norm) {
  std::string where = "no checkpoint was written (no --checkpoint-dir)";
  if (!o.checkpoint_dir.empty()) {
    const auto complete = complete_checkpoints(o.checkpoint_dir);
    where = complete.empty() ? "no checkpoint was written yet"
                             : "the last checkpoint, " +
                                   (fs::path(o.checkpoint_dir) / checkpoint_name(complete.front())).string() +
                                   ", is untouched: --resume continues from it";
  }
  return Error("step " + std::to_string(step) + ": the loss is " + std::to_string(loss) +
               " and the gradient norm " + std::to_string(grad_norm) +
               " (not finite); the run stops before updating the weights, and " + where +
               ". Lower --lr (or --max-grad-norm), or check the data");
}

}  // namespace

TrainResult train(const TrainOptions& o, const TrainEvents& events) {
  comm::SingleProcessCommunicator one_process;
  comm::Communicator& job = o.comm ? *o.comm : one_process;  // NCCL: the step's reductions
  comm::Communicator& comm = job.host_side();                // host-memory collectives
  const int ranks = comm.size(), rank = comm.rank();
  const bool rank0 = rank == 0;
  auto note = [&](const std::string& line) {
    if (rank0 && events.note) events.note(line);
  };
  const auto run_start = Clock::now();

  // ---- Inputs, all checked before anything is written or printed ----------------------
  // Notes about the inputs wait until every input is checked, so bad input prints one line.
  std::vector<std::string> input_notes;
  auto input_note = [&](const std::string& line) { input_notes.push_back(line); };
  validate(o.model);
  const ModelShape shape = shape_of(o.model);
  const ParameterLayout layout(shape);
  const std::int64_t params = layout.total();
  const BackendChoice backend_choice = parse_backend(o.backend, "--backend");
  const WeightDecayScope decay_scope = parse_weight_decay_scope(o.weight_decay_on, "--weight-decay-on");
  check_train_options(o, job, backend_choice);
  const TrainingData run_data = open_training_data(o);
  const TokenData& data = run_data.train;
  const comm::ZeroPartition partition(params, ranks, rank);
  const RankShard& mine = partition.mine();
  std::optional<Checkpoint> checkpoint;
  if (!o.checkpoint_dir.empty()) {
    if (o.resume) {
      // Each rank checks the state files it will read; rank 0 also the weights file.
      checkpoint = Checkpoint::open_latest(o.checkpoint_dir, o.model, params,
                                           {mine.global_begin, mine.global_end(), rank0});
      if (!checkpoint)
        input_note("resume: no checkpoint in " + o.checkpoint_dir + " yet; starting from step 0");
    } else {
      expect_no_checkpoints(o.checkpoint_dir);  // any ckpt-*, not only `latest`
    }
    // Room for one more checkpoint beside the last: a full disk is an error now, not at step N.
    if (!checkpoint || checkpoint->position().step < o.steps)
      check_checkpoint_space(
          o.checkpoint_dir,
          checkpoint_bytes(params, static_cast<std::int64_t>(layout.entries().size()), ranks));
  }
  // A Hugging Face checkpoint to start from: config.json and every tensor checked here; a
  // checkpoint of this run, when there is one, takes precedence (a restarted --init-from run).
  std::optional<HfCheckpoint> init;
  if (!o.init_from.empty()) {
    if (checkpoint)
      note("resume: --init-from " + o.init_from + " is not read; the run continues from its checkpoint");
    else
      init.emplace(o.init_from, o.model);
  }
  const HfExportOptions hf_export{o.export_safetensors, o.export_dtype, o.export_shard_bytes,
                                  o.export_tokenizer_files, o.tokenizer};
  const bool export_file = !o.export_safetensors.empty() && exports_single_file(o.export_safetensors);
  if (!o.export_safetensors.empty() && !export_file) check_hf_export(hf_export);
  if (export_file && (o.export_dtype != "bf16" || !o.export_tokenizer_files.empty()))
    throw Error("--export-safetensors " + o.export_safetensors +
                ": one .safetensors file holds bf16 weights only; for "
                "--export-dtype or --export-tokenizer name a directory (a path not ending in .safetensors)");
  // The compute device, and whether the run fits in its memory: both before anything is written.
  ThreadPool threads(o.threads);
  const unsigned blas_threads =
      o.blas_threads ? o.blas_threads : std::max(1u, std::thread::hardware_concurrency());
  ComputeBackend device = open_backend(backend_choice, threads, blas_threads, comm.local_rank());
  const TrainingFootprint footprint{o.micro_batch, o.grad_accum, ranks, o.param_offload};
  if (const auto line = check_training_memory(device, shape, footprint, o.gpu_memory_limit))
    input_note(*line);
  Plan plan = o.plan ? *o.plan : default_plan(o.model, params, o.state_dir);  // creates state_dir
  if (!o.plan) {
    plan.cluster.nodes = comm.nodes();  // the default plan takes the launched shape
    plan.cluster.gpus_per_node = comm.local_size();
    input_note("plan: none given; using the default plan (one disk tier under " + o.state_dir + "):");
    input_note(to_json(plan).dump());
  }
  check_train_plan(o, plan, params);
  comm::check_world_matches(comm, plan.cluster);  // collective: every rank stops alike on a mismatch
  if (ranks > 1 && (ranks & (ranks - 1)) != 0)
    input_note("note: " + std::to_string(ranks) +
               " ranks is not a power of two: the run is deterministic, but its gradient "
               "sums differ in the last bits from runs with 1, 2, 4, ... ranks (docs/comm.md, \"Determinism "
               "of reductions\")");
  LrSchedule lr = o.lr;
  if (lr.decay_end <= 0) lr.decay_end = o.steps;
  validate(lr);
  for (const std::string& line : input_notes) note(line);

  // ---- Compute device, model and offload engine ---------------------------------------
  Backend& backend = *device.backend;
  const std::string run = o.run_name.empty() ? offload::default_run_name() : o.run_name;
  offload::TierRunDirectories run_dirs(plan, run);
  offload::RankEngine engine(plan, mine, run, threads);
  offload::UpdatePipeline& pipeline = engine.pipeline();
  pipeline.set_weight_decay_mask(weight_decay_mask(decay_scope, layout, mine));
  const Json settings = resume_settings(o, lr, blas_threads, data, ranks);
  PhaseTrace trace(o.trace_path, ranks, rank);

  // This rank's bf16 weights (all of them on one rank): what the update phase writes and the
  // weight provider reads. Owners of buffers that queued exchanges touch are declared before
  // the exchange, so they outlive its worker.
  // Host memory from the backend (pinned on a GPU), so weight copies overlap compute and update.
  HostBuffer weights_owner = backend.allocate_host(static_cast<std::size_t>(mine.elements) * sizeof(bf16));
  const std::span<bf16> weights(static_cast<bf16*>(weights_owner.data()),
                                static_cast<std::size_t>(mine.elements));
  std::unique_ptr<comm::LayerExchange> exchange;
  if (ranks > 1) exchange = std::make_unique<comm::LayerExchange>(comm, partition);
  GradientHandover grads(backend, layout, partition, exchange.get());
  // Gathered from the shards (ZeRO-3), streamed from host memory (--param-offload) or resident.
  RankWeights model_weights(backend, layout, weights, exchange.get(), footprint);
  TransformerModel model(backend, shape, {o.micro_batch, DType::bf16, streams_gradients(footprint)},
                         model_weights.provider());

  // ---- Initial state: fp32 master p (+ m, v) in the engine; bf16 weights = round(p) ---
  TrainingPosition pos{0, o.seed, 0};
  if (checkpoint) {
    pos = checkpoint->position();
    for (const std::string& line : checkpoint->notes()) note(line);
    if (pos.seed != o.seed)
      note("resume: using the checkpoint's seed " + std::to_string(pos.seed) + " (--seed " +
           std::to_string(o.seed) + " ignored)");
    for (const std::string& warning : resume_setting_warnings(settings, checkpoint->settings()))
      note(warning);
    pipeline.load_state([&](const offload::Subgroup& sg, float* p, float* m, float* v) {
      checkpoint->read_state(mine.global_begin + sg.begin, sg.elements, p, m, v);
      fp32_to_bf16(p, weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
    });
    note("resume: continuing from " + checkpoint->path() + " (step " + std::to_string(pos.step) +
         ", written by " + std::to_string(checkpoint->ranks()) +
         (checkpoint->ranks() == 1 ? " rank" : " ranks") + ")");
  } else if (init) {
    // Each rank streams its own range, tensor by tensor, into its subgroups' homes.
    pipeline.load_state([&](const offload::Subgroup& sg, float* p, float*, float*) {
      init->read(mine.global_begin + sg.begin, sg.elements, p);
      fp32_to_bf16(p, weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
    });
    note("init: weights from " + o.init_from + " (" + init->dtypes() + "), fresh optimizer state");
  } else {
    // Each element's initial value is a pure function of (seed, index): hashed on every core
    // (billions of parameters would take minutes on one).
    pipeline.load_state([&](const offload::Subgroup& sg, float* p, float*, float*) {
      threads.parallel_for(
          static_cast<std::size_t>(sg.elements), 4096, [&](std::size_t begin, std::size_t end) {
            initial_values(layout, o.seed, mine.global_begin + sg.begin + static_cast<std::int64_t>(begin),
                           std::span<float>(p + begin, end - begin));
            fp32_to_bf16(p + begin, weights.data() + sg.begin + static_cast<std::int64_t>(begin),
                         end - begin);
          });
    });
  }
  model_weights.upload_all();
  trace.mark("started " + std::to_string(pos.step));

  // Rank r runs the global micro-batches r*a .. r*a+a-1 of each step (a = grad_accum), drawing
  // the sequences one process would draw for them; gradients are means over all of them.
  const int a = o.grad_accum;
  const std::int64_t global_micro_batches = static_cast<std::int64_t>(ranks) * a;
  const float loss_scale = 1.0f / static_cast<float>(global_micro_batches);
  std::optional<MicroBatchGradientSum> gradient_sum;  // none when the gradients are streamed (a = 1)
  if (!streams_gradients(footprint)) gradient_sum.emplace(backend, model.gradients(), a);
  StepCollectives collectives(job, backend);
  const std::int64_t T = o.model.seq_len, B = o.micro_batch;
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(B * T)), targets(inputs.size());
  std::vector<double> my_losses(static_cast<std::size_t>(a)),
      all_losses(static_cast<std::size_t>(global_micro_batches));
  const std::int64_t chunks = (params + kNormChunk - 1) / kNormChunk;
  std::vector<double> chunk_sums(static_cast<std::size_t>(chunks));
  TrainResult result;
  if (run_data.validation)
    note("eval: validation loss on " + run_data.validation->description() + " every " +
         (o.eval_every > 0 ? std::to_string(o.eval_every) + " steps and " : std::string()) +
         "after the last step");
  const std::int64_t first_step = pos.step + 1;
  double tokens_total = 0, seconds_total = 0;
  std::int64_t checkpoints = 0;
  // Writes the checkpoint of the step just done; `log_step(checkpoint_s)` logs the step once
  // its files are durable but before the checkpoint is published, so a kill never leaves a
  // published step without its log line (RunLog drops the lines of unpublished steps).
  auto save_checkpoint = [&](const std::function<void(double)>& log_step) {
    const auto c0 = Clock::now();
    trace.mark("checkpoint-begin " + std::to_string(pos.step));
    CheckpointWriteOptions write{o.checkpoint_pause, [&] { log_step(seconds_since(c0)); }};
    write_checkpoint(comm, o.checkpoint_dir, o.model, layout, partition, weights, pipeline, pos, settings,
                     write);
    trace.mark("checkpoint-end " + std::to_string(pos.step));
    ++checkpoints;
  };

  // From here on, with several ranks, an error ends the job at once (abort_job) while every
  // object a queued exchange may still touch is alive: unwinding first would destroy them and
  // could wait forever on a peer that is blocked in a collective.
  try {
    // ---- The loop ---------------------------------------------------------------------
    for (std::int64_t step = first_step; step <= o.steps; ++step) {
      const auto step0 = Clock::now();
      trace.mark("step-begin " + std::to_string(step));

      // Forward and backward over this rank's micro-batches; gradients tree-summed in fp32.
      double forward_s = 0, backward_s = 0;
      for (int j = 0; j < a; ++j) {
        const std::int64_t g = static_cast<std::int64_t>(rank) * a + j;  // global micro-batch
        for (std::int64_t b = 0; b < B; ++b)
          data.sequence(
              pos.seed, pos.data_position + g * B + b,
              std::span(inputs).subspan(static_cast<std::size_t>(b * T), static_cast<std::size_t>(T)),
              std::span(targets).subspan(static_cast<std::size_t>(b * T), static_cast<std::size_t>(T)));
        model.zero_gradients();
        auto t0 = Clock::now();
        my_losses[static_cast<std::size_t>(j)] = model.forward(inputs, targets);
        forward_s += seconds_since(t0);
        t0 = Clock::now();
        model.backward(loss_scale, [&](const GradientSegment& seg) {
          const Tensor summed = gradient_sum ? gradient_sum->add(j, seg.range) : seg.gradient;
          if (j == a - 1) grads.range_final(seg.range, summed);
        });
        backend.synchronize();  // a GPU enqueues asynchronously: time the ops, not their launch
        backward_s += seconds_since(t0);
      }
      auto t0 = Clock::now();
      grads.finish();  // the exchange is idle from here: direct collectives are allowed
      const double gradient_wait_s = seconds_since(t0);  // the gradient copies that did not overlap backward
      pos.data_position += global_micro_batches * B;

      // The step's loss: every micro-batch's, added in global order as one process does.
      collectives.all_gather(std::span<const double>(my_losses), std::span<double>(all_losses));
      double loss = 0;
      for (double x : all_losses) loss += x;
      loss /= static_cast<double>(global_micro_batches);

      // Global gradient norm: fixed chunks, which never straddle ranks; each rank fills its
      // own chunks, the others stay 0, so the sum over ranks is exact.
      std::fill(chunk_sums.begin(), chunk_sums.end(), 0.0);
      const auto my_sums = offload::chunk_square_sums(grads.shard(), threads);
      std::copy(my_sums.begin(), my_sums.end(), chunk_sums.begin() + mine.global_begin / kNormChunk);
      collectives.all_reduce_sum(std::span<double>(chunk_sums));
      const double grad_norm = offload::global_norm(chunk_sums);
      // The same values on every rank, so every rank stops alike, before the update could
      // write a non-finite state (the last checkpoint stays the one to resume from).
      if (!std::isfinite(loss) || !std::isfinite(grad_norm))
        throw non_finite_step_error(o, step, loss, grad_norm);
      if (plan.gradients == GradientPolicy::flush_fp32) pipeline.flush_gradients(grads.shard());  // baseline
      backward_s += seconds_since(t0);

      // Update phase on this rank's shard: AdamW over every subgroup, wherever it lives.
      AdamWParams adam{lr.at(step), o.beta1,        o.beta2,
                       o.eps,       o.weight_decay, offload::clip_scale(grad_norm, o.max_grad_norm),
                       step};
      trace.mark("update-begin " + std::to_string(step));
      model_weights.before_update();  // the update rewrites the host weights
      const offload::UpdateStats upd = pipeline.update(engine.plan_iteration(step - 1), grads.shard(), adam,
                                                       weights, model_weights.on_subgroup_updated());
      trace.mark("update-end " + std::to_string(step));

      // New weights back to the compute device.
      t0 = Clock::now();
      model_weights.after_update();
      const double weights_s = seconds_since(t0);
      pos.step = step;

      // Validation loss of the new weights (not part of step_s): forward only, the optimizer
      // and the data position untouched.
      std::optional<double> eval_loss;
      double eval_s = 0;
      if (run_data.validation && evaluation_due(o.eval_every, step, o.steps)) {
        t0 = Clock::now();
        eval_loss = run_data.validation->loss(model, collectives, rank, ranks);
        eval_s = seconds_since(t0);
      }

      // The step as the job saw it: times of the slowest rank, counts summed over ranks.
      // Collective; with a checkpoint due, called inside its write (above).
      auto log_step = [&](double checkpoint_s) {
        const double tokens = static_cast<double>(B * T * global_micro_batches);
        Json rec = step_record(
            {step, loss, adam.lr, grad_norm, adam.grad_scale, tokens},
            {seconds_since(step0) - eval_s, forward_s, backward_s, weights_s, checkpoint_s, gradient_wait_s},
            upd, model_weights.fetches_since_last_call(), collectives);
        if (eval_loss) {
          rec["eval_loss"] = *eval_loss;
          rec["eval_s"] = eval_s;
        }
        tokens_total += tokens;
        seconds_total += rec["step_s"].get<double>();
        if (rank0 && events.step) events.step(rec);
        result.steps.push_back(std::move(rec));
      };
      const bool due = (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == o.steps;
      if (!o.checkpoint_dir.empty() && due)
        save_checkpoint(log_step);
      else
        log_step(0);
    }
    if (first_step > o.steps)
      note("resume: the checkpoint is already at step " + std::to_string(pos.step) + "; nothing to train");

    // ---- Export -------------------------------------------------------------------------
    const std::map<std::string, std::string> export_metadata{{"format", "pt"},
                                                             {"step", std::to_string(pos.step)}};
    if (export_file)
      export_safetensors(comm, partition, weights, layout, export_metadata, o.export_safetensors);
    else if (!o.export_safetensors.empty())
      export_hf_directory(comm, partition, layout, o.model, weights, pipeline, export_metadata, hf_export);
  } catch (const std::exception& e) {
    if (ranks > 1) comm.abort_job(e.what());
    throw;
  }

  result.summary = Json{{"steps", static_cast<std::int64_t>(result.steps.size())},
                        {"first_step", first_step},
                        {"last_step", pos.step},
                        {"params", params},
                        {"ranks", ranks},
                        {"backend", device.description},
                        {"param_offload", o.param_offload},
                        {"mode", to_string(plan.mode)},
                        {"tokens", tokens_total},
                        {"tokens_per_s", seconds_total > 0 ? tokens_total / seconds_total : 0.0},
                        {"seconds", seconds_since(run_start)},
                        {"checkpoints", checkpoints}};
  if (!result.steps.empty()) {
    result.summary["first_loss"] = result.steps.front()["loss"];
    result.summary["last_loss"] = result.steps.back()["loss"];
    if (result.steps.back().contains("eval_loss"))
      result.summary["last_eval_loss"] = result.steps.back()["eval_loss"];
  }
  if (!o.export_safetensors.empty()) result.summary["export"] = o.export_safetensors;
  if (init) result.summary["init_from"] = o.init_from;
  trace.mark("finished " + std::to_string(pos.step));
  return result;
}

}  // namespace mlpo::train
