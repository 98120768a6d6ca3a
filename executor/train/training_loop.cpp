#include "executor/train/training_loop.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "executor/io/unique_fd.hpp"
#include "executor/model/parameter_init.hpp"
#include "executor/model/transformer_model.hpp"
#include "executor/offload/gradient_norm.hpp"
#include "executor/offload/rank_engine.hpp"
#include "executor/offload/rank_shard.hpp"
#include "executor/train/checkpoint.hpp"
#include "executor/train/default_plan.hpp"
#include "executor/train/safetensors.hpp"
#include "executor/train/token_data.hpp"
#include "kernels/cpu/convert.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace mlpo::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

ModelShape shape_of(const ModelSpec& s) {
  ModelShape m;
  m.vocab = static_cast<int>(s.vocab);
  m.hidden = static_cast<int>(s.hidden);
  m.layers = static_cast<int>(s.layers);
  m.heads = static_cast<int>(s.heads);
  m.kv_heads = static_cast<int>(s.kv_heads);
  m.ffn_hidden = static_cast<int>(s.ffn_hidden);
  m.seq_len = static_cast<int>(s.seq_len);
  m.rope_theta = static_cast<float>(s.rope_theta);
  m.norm_eps = static_cast<float>(s.norm_eps);
  m.tied_embeddings = s.tied_embeddings;
  return m;
}

// Appends "<event>\n" lines to a file with O_APPEND writes, unbuffered, so a test that kills
// the process knows the last phase it entered. Inactive without a path.
class PhaseTrace {
 public:
  explicit PhaseTrace(const std::string& path) {
    if (!path.empty()) fd_ = io::UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  }
  void mark(const std::string& event) {
    if (!fd_.valid()) return;
    const std::string line = event + "\n";
    [[maybe_unused]] ssize_t w = ::write(fd_.get(), line.data(), line.size());
  }

 private:
  io::UniqueFd fd_;
};

// Removes the run's tier directories (<tier>/mlpo/<run>) at the end, also after an error; at
// the start, removes those of earlier training runs whose process is gone (killed runs).
class TierRunDirectories {
 public:
  TierRunDirectories(const Plan& plan, const std::string& run) {
    for (const auto& t : plan.tiers) {
      if (t.kind == TierKind::memory) continue;
      const fs::path base = fs::path(t.path) / "mlpo";
      dirs_.push_back(base / run);
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(base, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("train-", 0) != 0) continue;
        const long pid = std::strtol(name.c_str() + 6, nullptr, 10);
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
      }
    }
  }
  ~TierRunDirectories() {
    for (const auto& d : dirs_) {
      std::error_code ec;
      fs::remove_all(d, ec);
      fs::remove(d.parent_path(), ec);  // <tier>/mlpo, only if now empty
    }
  }
  TierRunDirectories(const TierRunDirectories&) = delete;
  TierRunDirectories& operator=(const TierRunDirectories&) = delete;

 private:
  std::vector<fs::path> dirs_;
};

Json settings_of(const TrainOptions& o, const LrSchedule& lr, unsigned blas_threads, const TokenData& data) {
  return Json{{"seq_len", o.model.seq_len},
              {"micro_batch", o.micro_batch},
              {"grad_accum", o.grad_accum},
              {"lr", lr.max_lr},
              {"min_lr", lr.min_lr},
              {"warmup_steps", lr.warmup_steps},
              {"lr_decay_end", lr.decay_end},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"eps", o.eps},
              {"weight_decay", o.weight_decay},
              {"max_grad_norm", o.max_grad_norm},
              {"blas_threads", blas_threads},
              {"data_tokens", data.tokens()}};
}

void check_options(const TrainOptions& o) {
  if (o.steps < 1) throw Error("--steps: must be >= 1");
  if (o.micro_batch < 1) throw Error("--micro-batch: must be >= 1");
  if (o.grad_accum < 1) throw Error("--grad-accum: must be >= 1");
  if (o.checkpoint_every < 0) throw Error("--checkpoint-every: must be >= 0");
  if (o.resume && o.checkpoint_dir.empty()) throw Error("--resume needs --checkpoint-dir (where the checkpoints are)");
  if (!o.export_safetensors.empty()) {
    const fs::path parent = fs::absolute(o.export_safetensors).parent_path();
    if (!fs::is_directory(parent) || ::access(parent.c_str(), W_OK) != 0)
      throw Error("--export-safetensors " + o.export_safetensors + ": directory " + parent.string() + " does not exist or is not writable");
  }
}

void check_plan(const TrainOptions& o, const Plan& plan, std::int64_t params) {
  validate(plan);
  if (plan.model_params != params)
    throw Error("--plan: made for a model of " + std::to_string(plan.model_params) + " parameters ('" + plan.model_name +
                "'), but --model " + o.model.name + " has " + std::to_string(params) +
                "; make a plan for this model with mlpo-tune --model " + o.model.name);
  if (plan.cluster.ranks() != 1)
    throw Error("--plan: is for " + std::to_string(plan.cluster.ranks()) +
                " ranks; training runs one rank for now (make the plan with --nodes 1 --gpus-per-node 1)");
  for (const auto& t : plan.tiers)
    if (t.kind != TierKind::memory && !fs::is_directory(t.path))
      throw Error("--plan: tier '" + t.name + "' (" + t.path + "): directory does not exist; create it or fix the plan's path");
}

}  // namespace

TrainResult train(const TrainOptions& o, const TrainEvents& events) {
  auto note = [&](const std::string& line) {
    if (events.note) events.note(line);
  };
  const auto run_start = Clock::now();

  // ---- Inputs, all checked before anything is written ---------------------------------
  validate(o.model);
  const ModelShape shape = shape_of(o.model);
  const ParameterLayout layout(shape);
  const std::int64_t params = layout.total();
  check_options(o);
  TokenData data(o.data, o.model.vocab, o.model.seq_len, o.token_bytes);
  std::optional<Checkpoint> checkpoint;
  if (!o.checkpoint_dir.empty()) {
    if (o.resume) {
      checkpoint = Checkpoint::open_latest(o.checkpoint_dir, o.model, params);
      if (!checkpoint) note("resume: no checkpoint in " + o.checkpoint_dir + " yet; starting from step 0");
    } else if (fs::exists(fs::path(o.checkpoint_dir) / "latest")) {
      throw Error("--checkpoint-dir " + o.checkpoint_dir +
                  ": already holds checkpoints of a run; pass --resume to continue it, or choose another directory");
    }
  }
  const Plan plan = o.plan ? *o.plan : default_plan(o.model, params, o.state_dir);  // creates state_dir
  if (!o.plan) {
    note("plan: none given; using the default plan (one disk tier under " + o.state_dir + "):");
    note(to_json(plan).dump());
  }
  check_plan(o, plan, params);
  LrSchedule lr = o.lr;
  if (lr.decay_end <= 0) lr.decay_end = o.steps;
  validate(lr);

  // ---- Compute device, model and offload engine ---------------------------------------
  ThreadPool threads(o.threads);
  const unsigned blas_threads = o.blas_threads ? o.blas_threads : std::max(1u, std::thread::hardware_concurrency());
  CpuBackend backend(threads, {blas_threads, cpu::GemmPath::blas});
  TransformerModel model(backend, shape, {o.micro_batch, DType::bf16});
  const std::string run = o.run_name.empty() ? "train-" + std::to_string(::getpid()) : o.run_name;
  TierRunDirectories run_dirs(plan, run);
  const offload::RankShard shard = offload::shard_for(params, 1, 0);
  offload::RankEngine engine(plan, shard, run, threads);
  offload::UpdatePipeline& pipeline = engine.pipeline();
  const Json settings = settings_of(o, lr, blas_threads, data);
  PhaseTrace trace(o.trace_path);

  // ---- Initial state: fp32 master p (+ m, v) in the engine; bf16 weights = round(p) ---
  std::vector<bf16> host_weights(static_cast<std::size_t>(params));
  std::vector<bf16> host_grads(static_cast<std::size_t>(params));
  TrainingPosition pos{0, o.seed, 0};
  if (checkpoint) {
    pos = checkpoint->position();
    if (pos.seed != o.seed) note("resume: using the checkpoint's seed " + std::to_string(pos.seed) + " (--seed " + std::to_string(o.seed) + " ignored)");
    for (const auto& [key, value] : settings.items())
      if (!checkpoint->settings().contains(key) || checkpoint->settings()[key] != value)
        note("warning: resume: " + key + " is " + value.dump() + " but the checkpoint was made with " +
             (checkpoint->settings().contains(key) ? checkpoint->settings()[key].dump() : "none") +
             "; the run will not match an uninterrupted one");
    pipeline.load_state([&](const offload::Subgroup& sg, float* p, float* m, float* v) {
      checkpoint->read_state(sg.begin, sg.elements, p, m, v);
      fp32_to_bf16(p, host_weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
    });
    note("resume: continuing from " + checkpoint->path() + " (step " + std::to_string(pos.step) + ")");
  } else {
    pipeline.load_state([&](const offload::Subgroup& sg, float* p, float*, float*) {
      initial_values(layout, o.seed, sg.begin, std::span<float>(p, static_cast<std::size_t>(sg.elements)));
      fp32_to_bf16(p, host_weights.data() + sg.begin, static_cast<std::size_t>(sg.elements));
    });
  }
  backend.copy_from_host(model.weights(), host_weights.data());
  trace.mark("started " + std::to_string(pos.step));

  // Device buffer for the bf16 gradients on their way to host memory.
  DeviceBuffer grad_staging = backend.allocate(DType::bf16, params);
  const Tensor grads16 = grad_staging.view(DType::bf16, {params});
  auto hand_to_host = [&](const GradientSegment& seg) {
    const Tensor acc = model.gradients().slice(seg.range.offset, {seg.range.count});
    const Tensor half = grads16.slice(seg.range.offset, {seg.range.count});
    backend.cast(half, acc);
    backend.copy_to_host(host_grads.data() + seg.range.offset, half);
  };

  const std::int64_t T = o.model.seq_len, B = o.micro_batch;
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(B * T)), targets(inputs.size());
  TrainResult result;
  const std::int64_t first_step = pos.step + 1;
  double tokens_total = 0, seconds_total = 0;
  std::int64_t checkpoints = 0;
  auto save_checkpoint = [&] {
    const auto c0 = Clock::now();
    trace.mark("checkpoint-begin " + std::to_string(pos.step));
    write_checkpoint(o.checkpoint_dir, o.model, layout, host_weights, pipeline, pos, settings, {o.checkpoint_pause});
    trace.mark("checkpoint-end " + std::to_string(pos.step));
    ++checkpoints;
    return seconds_since(c0);
  };

  // ---- The loop -----------------------------------------------------------------------
  for (std::int64_t step = first_step; step <= o.steps; ++step) {
    const auto step0 = Clock::now();
    trace.mark("step-begin " + std::to_string(step));

    // Forward and backward over the micro-batches; gradients accumulate in fp32.
    model.zero_gradients();
    double loss = 0, forward_s = 0, backward_s = 0;
    for (int a = 0; a < o.grad_accum; ++a) {
      for (std::int64_t b = 0; b < B; ++b)
        data.sequence(pos.seed, pos.data_position++, std::span(inputs).subspan(static_cast<std::size_t>(b * T), static_cast<std::size_t>(T)),
                      std::span(targets).subspan(static_cast<std::size_t>(b * T), static_cast<std::size_t>(T)));
      auto t0 = Clock::now();
      loss += model.forward(inputs, targets);
      forward_s += seconds_since(t0);
      t0 = Clock::now();
      const bool last = a == o.grad_accum - 1;
      model.backward(1.0f / static_cast<float>(o.grad_accum), last ? GradientsReady(hand_to_host) : GradientsReady());
      backward_s += seconds_since(t0);
    }
    loss /= o.grad_accum;

    // Global gradient norm (fixed chunk order: the same under any plan) -> clipping.
    auto t0 = Clock::now();
    const auto sums = offload::chunk_square_sums(host_grads, threads);
    const double grad_norm = offload::global_norm(sums);
    if (plan.gradients == GradientPolicy::flush_fp32) pipeline.flush_gradients(host_grads);  // baseline
    backward_s += seconds_since(t0);

    // Update phase: AdamW over every subgroup, wherever it lives; new bf16 weights to host.
    AdamWParams adam{lr.at(step), o.beta1, o.beta2, o.eps, o.weight_decay, offload::clip_scale(grad_norm, o.max_grad_norm), step};
    trace.mark("update-begin " + std::to_string(step));
    const offload::UpdateStats upd = pipeline.update(engine.plan_iteration(step - 1), host_grads, adam, host_weights);
    trace.mark("update-end " + std::to_string(step));

    // New weights back to the compute device.
    t0 = Clock::now();
    backend.copy_from_host(model.weights(), host_weights.data());
    const double weights_s = seconds_since(t0);
    pos.step = step;

    double checkpoint_s = 0;
    const bool due = (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == o.steps;
    if (!o.checkpoint_dir.empty() && due) checkpoint_s = save_checkpoint();

    const double step_s = seconds_since(step0);
    const double tokens = static_cast<double>(B * T * o.grad_accum);
    tokens_total += tokens;
    seconds_total += step_s;
    Json rec{{"step", step},
             {"loss", loss},
             {"lr", adam.lr},
             {"grad_norm", grad_norm},
             {"clip_scale", adam.grad_scale},
             {"tokens", tokens},
             {"tokens_per_s", tokens / step_s},
             {"step_s", step_s},
             {"forward_s", forward_s},
             {"backward_s", backward_s},
             {"update_s", upd.seconds},
             {"adam_s", upd.adam_s},
             {"prefetch_stall_s", upd.prefetch_stall_s},
             {"weights_to_device_s", weights_s},
             {"checkpoint_s", checkpoint_s},
             {"cache_hits", upd.cache_hits},
             {"reads", upd.reads},
             {"writes", upd.writes},
             {"elements", upd.elements}};
    Json tiers = Json::array();
    for (const auto& t : upd.tiers)
      tiers.push_back(Json{{"name", t.name}, {"read_bytes", t.read_bytes}, {"write_bytes", t.write_bytes}, {"busy_s", t.busy_s}, {"slot_wait_s", t.slot_wait_s}});
    rec["tiers"] = tiers;
    if (events.step) events.step(rec);
    result.steps.push_back(std::move(rec));
  }
  if (first_step > o.steps) note("resume: the checkpoint is already at step " + std::to_string(pos.step) + "; nothing to train");

  // ---- Export ---------------------------------------------------------------------------
  if (!o.export_safetensors.empty())
    write_file_atomic(o.export_safetensors, safetensors_bytes(layout, host_weights, {{"format", "pt"}, {"step", std::to_string(pos.step)}}));

  result.summary = Json{{"steps", static_cast<std::int64_t>(result.steps.size())},
                        {"first_step", first_step},
                        {"last_step", pos.step},
                        {"params", params},
                        {"mode", to_string(plan.mode)},
                        {"tokens", tokens_total},
                        {"tokens_per_s", seconds_total > 0 ? tokens_total / seconds_total : 0.0},
                        {"seconds", seconds_since(run_start)},
                        {"checkpoints", checkpoints}};
  if (!result.steps.empty()) {
    result.summary["first_loss"] = result.steps.front()["loss"];
    result.summary["last_loss"] = result.steps.back()["loss"];
  }
  if (!o.export_safetensors.empty()) result.summary["export"] = o.export_safetensors;
  trace.mark("finished " + std::to_string(pos.step));
  return result;
}

}  // namespace mlpo::train
