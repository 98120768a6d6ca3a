// mlpo-run: execute pre-training (or the update phase alone) under a plan.
//
// Four modes, each with its own flags: training (train::train), --update-only
// (update_only::run_update_only), prepare-data (data::prepare_data) and report
// (runlog::write_run_report). main() declares the flags, checks that the chosen mode reads every
// flag given (FlagModes), and hands the mode its flags: each mode validates them, calls its one
// library function and prints. The --help text is cli/mlpo_run_help.hpp.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <utility>
#include <vector>

#include "cli/cli_main.hpp"
#include "cli/flag_modes.hpp"
#include "cli/flag_values.hpp"
#include "cli/mlpo_run_help.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/model_spec.hpp"
#include "core/path_checks.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/launch_env.hpp"
#include "executor/comm/open_communicator.hpp"
#include "executor/update_only/update_only_run.hpp"
#include "executor/hf/hf_checkpoint.hpp"
#include "executor/data/prepare_data.hpp"
#include "executor/runlog/run_log.hpp"
#include "executor/runlog/run_report.hpp"
#include "executor/train/training_loop.hpp"
#include "kernels/attention_path.hpp"

namespace {

using mlpo::cli::Precision;

// ---- Each mode's flags ----------------------------------------------------------------

// prepare-data.
struct PrepareDataFlags {
  mlpo::data::PrepareDataOptions options;
  std::string model;  // preset or file the data is for
};

// report.
struct ReportFlags {
  std::string log, out, title;
};

// The flags of the modes that run steps: training and --update-only.
struct StepFlags {
  std::string plan_path, log_path;
  std::vector<std::string> tier_paths;  // NAME=DIR: the plan's tier NAME at DIR on this machine
  std::int64_t steps = 0;               // 0: the mode's default
  std::uint64_t seed = 1;
  double lr = 0, max_grad_norm = 1.0;  // lr 0: the mode's default
  unsigned threads = 0;
  bool quiet = false;
  std::string mode = "mlp";  // or baseline
};

// Training: most flags go straight into the options; these need converting first.
struct TrainingFlags {
  mlpo::train::TrainOptions options;
  std::string model_name;
  std::int64_t seq_len = 0;  // 0: the model's
  std::string export_shard_size = "5GB";
  std::string comm_name = "auto";
  std::string gpu_memory_limit;   // "": the GPU's free memory
  std::string host_memory_limit;  // "": MemAvailable
  std::string save_plan;          // without --plan: write the default plan here
};

// --update-only (its AdamW flags are training's: --beta1, --beta2, --eps, --weight-decay).
struct UpdateOnlyFlags {
  bool update_only = false;
  std::string params_text, profile_path;
  mlpo::update_only::UpdateOnlyOptions options;
};

// ---- Declaring the flags, in --help order -----------------------------------------------

CLI::App* add_prepare_data(CLI::App& app, PrepareDataFlags& f) {
  auto* prepare = app.add_subcommand(
      "prepare-data", "Tokenize files (byte-level, or a SentencePiece --tokenizer) into an llm.c shard");
  mlpo::data::PrepareDataOptions& p = f.options;
  prepare
      ->add_option("--input", p.inputs,
                   "Files or directories (recursively, sorted by path), concatenated in order")
      ->required();
  prepare
      ->add_option("--out", p.out,
                   "Token file to write (llm.c shard: v1 uint16 tokens, v2 uint32 for vocabularies > 65536; "
                   "written atomically)")
      ->required();
  prepare->add_option(
      "--tokenizer", p.tokenizer,
      "SentencePiece model (tokenizer.model; spm_train makes one); default: byte-level, vocab 256");
  prepare->add_option("--model", f.model,
                      "Model preset or file the data is for: its vocab must hold the tokenizer's");
  prepare
      ->add_option("--threads", p.threads,
                   "Tokenizer threads (default: all cores); the output is the same for any count")
      ->check(mlpo::cli::whole_in(1, 4096));
  return prepare;
}

CLI::App* add_report(CLI::App& app, ReportFlags& f) {
  auto* report = app.add_subcommand(
      "report",
      "Draw a run log as one chart: loss (and eval_loss), tokens/s, phase seconds, tier GB and GB/s");
  report->add_option("log", f.log, "Run log: the JSON-lines file of mlpo-run --log")->required();
  report->add_option("--out", f.out, "Report to write: .svg, or .html (the SVG in a page)")->required();
  report->add_option("--title", f.title,
                     "Title line, e.g. the model and plan (default: the log's file name)");
  return report;
}

void add_step_flags(CLI::App& app, StepFlags& s) {
  app.add_option("--plan", s.plan_path,
                 "Plan file (mlpo.plan/1) from mlpo-tune or written by hand; training without it makes a "
                 "default plan")
      ->check(CLI::ExistingFile);
  app.add_option("--tier-path", s.tier_paths,
                 "NAME=DIR: run the plan's tier NAME in DIR (a plan made on another machine; repeatable)")
      ->expected(1)
      ->take_all();
  app.add_option("--steps", s.steps, "Optimizer steps (default: 100 training, 10 update-only)")
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 30));
  mlpo::cli::add_checked(
      app, "--seed", s.seed,
      "Seed of the model's initial weights and of data sampling (update-only: synthetic data)",
      mlpo::cli::unsigned_whole());
  app.add_option("--lr", s.lr, "Peak AdamW learning rate (default: 1e-3 training, 1e-4 update-only)")
      ->check(mlpo::cli::positive_real(Precision::fp32));
  mlpo::cli::add_checked(app, "--max-grad-norm", s.max_grad_norm,
                         "Global gradient-norm clipping threshold (0 = off)", mlpo::cli::non_negative_real());
  app.add_option("--threads", s.threads, "CPU threads for the compute ops and AdamW (default: all cores)")
      ->check(mlpo::cli::whole_in(1, 4096));
  app.add_option("--log", s.log_path, "Write one JSON object per step to this file (JSON lines)");
  app.add_flag("--quiet", s.quiet, "Print only notes and the summary");
}

// The model, the data, the batch and the optimizer.
void add_training_flags(CLI::App& app, TrainingFlags& f) {
  mlpo::train::TrainOptions& t = f.options;
  app.add_option("--model", f.model_name, "Model preset (tiny, small, 1b, ...) or mlpo.model/1 JSON file");
  app.add_option(
      "--data", t.data,
      "Token files or directories of them (prepare-data's, flat uint16/uint32, llm.c shards): one data set");
  app.add_option(
      "--tokenizer", t.tokenizer,
      "The SentencePiece model the data was made with: checked against the model's vocab and the data");
  app.add_option("--eval-data", t.eval_data,
                 "Held-out token files or directories: validation loss (eval_loss in the log)");
  mlpo::cli::add_checked(app, "--eval-every", t.eval_every,
                         "Validation loss every N steps (0 = only after the last step)",
                         mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  mlpo::cli::add_checked(app, "--eval-tokens", t.eval_tokens,
                         "Tokens of --eval-data evaluated, as fixed sequences (0 = all of it)",
                         mlpo::cli::whole_in(0, std::int64_t{1} << 50));
  mlpo::cli::add_checked(app, "--token-bytes", t.token_bytes,
                         "Width of a flat (headerless) token file's tokens", CLI::IsMember({2, 4}));
  app.add_option("--seq-len", f.seq_len, "Training sequence length (default: the model's seq_len)")
      ->check(mlpo::cli::whole_in(2, std::int64_t{1} << 20));
  mlpo::cli::add_checked(app, "--micro-batch", t.micro_batch, "Sequences per forward/backward",
                         mlpo::cli::whole_in(1, 1 << 16));
  mlpo::cli::add_checked(app, "--grad-accum", t.grad_accum, "Micro-batches per optimizer step",
                         mlpo::cli::whole_in(1, 1 << 16));
  mlpo::cli::add_checked(app, "--min-lr", t.lr.min_lr,
                         "Learning rate at the end of the cosine decay (at most --lr)",
                         mlpo::cli::non_negative_real(Precision::fp32));
  mlpo::cli::add_checked(app, "--warmup-steps", t.lr.warmup_steps, "Steps of linear warm-up",
                         mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  mlpo::cli::add_checked(app, "--lr-decay-steps", t.lr.decay_end,
                         "Step at which the cosine reaches --min-lr (0 = --steps)",
                         mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  mlpo::cli::add_checked(app, "--beta1", t.beta1, "AdamW beta1 (also update-only)",
                         mlpo::cli::fraction_below_one());
  mlpo::cli::add_checked(app, "--beta2", t.beta2, "AdamW beta2 (also update-only)",
                         mlpo::cli::fraction_below_one());
  mlpo::cli::add_checked(app, "--eps", t.eps, "AdamW epsilon (also update-only)",
                         mlpo::cli::positive_real(Precision::fp32));
  mlpo::cli::add_checked(app, "--weight-decay", t.weight_decay,
                         "AdamW decoupled weight decay (also update-only)",
                         mlpo::cli::non_negative_real(Precision::fp32));
  mlpo::cli::add_checked(
      app, "--weight-decay-on", t.weight_decay_on,
      "Weights the decay applies to: matrices (all but the RMSNorm gains, as Hugging Face and "
      "Megatron) or all",
      CLI::IsMember({"matrices", "all"}));
}

// Checkpoints, the export, the initial weights and where the run computes.
void add_training_run_flags(CLI::App& app, TrainingFlags& f) {
  mlpo::train::TrainOptions& t = f.options;
  app.add_option("--checkpoint-dir", t.checkpoint_dir,
                 "Directory of checkpoints (ckpt-<step>/ and a `latest` pointer)");
  mlpo::cli::add_checked(app, "--checkpoint-every", t.checkpoint_every,
                         "Checkpoint every K steps (0 = only at the end)",
                         mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  app.add_flag("--resume", t.resume,
               "Continue from the latest checkpoint in --checkpoint-dir (under this plan)");
  app.add_option(
      "--export-safetensors", t.export_safetensors,
      "Write the final weights: DIR = a Hugging Face LLaMA directory (config.json, safetensors shards + "
      "index, tokenizer files); a path ending in .safetensors = one file of bf16 weights (HF names)");
  mlpo::cli::add_checked(app, "--export-dtype", t.export_dtype,
                         "Directory export: bf16 (the weights trained with) or fp32 (the master weights)",
                         CLI::IsMember({"bf16", "fp32"}));
  app.add_option("--export-shard-size", f.export_shard_size,
                 "Directory export: tensor bytes per safetensors shard at most (GB = 1e9, GiB = 2^30)")
      ->capture_default_str()
      ->check(mlpo::cli::byte_size());
  app.add_option("--export-tokenizer", t.export_tokenizer_files,
                 "Directory export: more files to copy beside the weights (e.g. tokenizer_config.json); "
                 "--tokenizer is copied as tokenizer.model")
      ->check(CLI::ExistingFile);
  app.add_option("--init-from", t.init_from,
                 "Start from a Hugging Face LLaMA checkpoint directory (config.json + safetensors, "
                 "bf16/fp16/fp32), with a fresh "
                 "optimizer state; without --model its config.json is the model")
      ->check(CLI::ExistingDirectory);
  app.add_option("--state-dir", t.state_dir, "Tier directory of the default plan (used without --plan)")
      ->capture_default_str();
  app.add_option("--save-plan", f.save_plan,
                 "Without --plan: write the default plan (mlpo.plan/1 JSON) here, to edit or simulate");
  app.add_option(
         "--blas-threads", t.blas_threads,
         "Column blocks each GEMM is cut into, run on the --threads pool (default: all cores); results "
         "are bitwise reproducible for a fixed count")
      ->check(mlpo::cli::whole_in(1, 4096));
  mlpo::cli::add_checked(
      app, "--comm", f.comm_name,
      "Communicator between data-parallel ranks: auto (MPI when launched by mpirun/srun, else one "
      "process), mpi, single (one process; an error under a launcher of several ranks), nccl (GPU "
      "buffers: "
      "with --backend cuda on one rank, the step's reductions run through NCCL)",
      CLI::IsMember({"auto", "mpi", "single", "nccl"}));
  app.add_option(
         "--backend", t.backend,
         "Compute backend: cpu, cuda (this process's GPU: device 0, or the local rank's under a launcher) or "
         "cuda:N (GPU N). Results differ between cpu and cuda within bf16 rounding (docs/cuda.md)")
      ->capture_default_str();
  app.add_option(
         "--attention", t.attention,
         std::string("--backend cuda: the attention kernels, gemm (tensor-core GEMMs through cuBLASLt, "
                     "softmax kernels between them) or fused (fused fp32 kernels on the CUDA cores, the "
                     "reference); default ") +
             mlpo::attention_path_name(mlpo::kDefaultAttentionPath) + " (docs/cuda.md)")
      ->check(CLI::IsMember({"gemm", "fused"}));
  app.add_option("--gpu-memory-limit", f.gpu_memory_limit,
                 "--backend cuda: plan for at most this much GPU memory (e.g. 8GiB) instead of the device's "
                 "free memory; "
                 "the up-front check then refuses a run that would need more (to try parameter offload on a "
                 "large GPU)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--host-memory-limit", f.host_memory_limit,
                 "Plan for at most this much host memory (e.g. 16GiB) instead of MemAvailable; the up-front "
                 "check refuses a run whose weights, gradients, activations (CPU backend), buffers and cache "
                 "need more")
      ->check(mlpo::cli::byte_size());
  app.add_flag(
      "--param-offload", t.param_offload,
      "One process: keep the bf16 weights in host memory and stream them to the device one part (layer) at "
      "a time, two parts resident (parameter offload); with --grad-accum 1 the gradients also leave the "
      "device "
      "layer by layer as backward produces them; results are bitwise those without it");
}

void add_update_only_flags(CLI::App& app, UpdateOnlyFlags& f, std::string& mode) {
  mlpo::update_only::UpdateOnlyOptions& u = f.options;
  app.add_flag("--update-only", f.update_only,
               "Run only the offloaded update phase, with synthetic gradients");
  app.add_option("--params", f.params_text,
                 "Update-only: total parameters over all ranks (e.g. 1e9, 500M, 1B)")
      ->check(mlpo::cli::count_at_least(1));
  mlpo::cli::add_checked(
      app, "--ranks", u.ranks,
      "Update-only: rank processes to fork on this node, sharing the tiers (under mpirun/srun: one rank per "
      "launched process; leave it out)",
      mlpo::cli::whole_in(1, 256));
  mlpo::cli::add_checked(app, "--mode", mode,
                         "mlp: the plan as written; baseline: its ZeRO-3-offload baseline (first tier, fp32 "
                         "gradients flushed, ascending, no cache, no limit)",
                         CLI::IsMember({"mlp", "baseline"}));
  app.add_option("--profile", f.profile_path,
                 "Update-only: profile (mlpo.profile/1) for the physical bound of each step")
      ->check(CLI::ExistingFile);
  app.add_flag("--state-hash", u.state_hash,
               "Update-only: print state-sha256: <hex> over all ranks' final p, m, v");
}

// The --help section of each flag (groups show in the order their first flag was declared).
void set_help_groups(CLI::App& app) {
  using namespace mlpo::cli;
  const std::pair<const char*, std::vector<const char*>> groups[] = {
      {kGroupModel,
       {"--model", "--data", "--tokenizer", "--eval-data", "--eval-every", "--eval-tokens", "--token-bytes",
        "--seq-len", "--micro-batch", "--grad-accum", "--init-from"}},
      {kGroupSchedule,
       {"--steps", "--seed", "--lr", "--min-lr", "--warmup-steps", "--lr-decay-steps", "--beta1", "--beta2",
        "--eps", "--weight-decay", "--weight-decay-on", "--max-grad-norm"}},
      {kGroupPlan,
       {"--plan", "--tier-path", "--state-dir", "--save-plan", "--mode", "--threads", "--blas-threads",
        "--backend", "--attention", "--comm", "--param-offload", "--gpu-memory-limit",
        "--host-memory-limit"}},
      {kGroupOutput, {"--log", "--quiet"}},
      {kGroupCheckpoint, {"--checkpoint-dir", "--checkpoint-every", "--resume"}},
      {kGroupExport, {"--export-safetensors", "--export-dtype", "--export-shard-size", "--export-tokenizer"}},
      {kGroupUpdateOnly, {"--update-only", "--params", "--ranks", "--profile", "--state-hash"}},
  };
  for (const auto& [group, flags] : groups)
    for (const char* flag : flags) app.get_option(flag)->group(group);
}

// Which mode reads which flag: one the chosen mode would ignore is an error naming the mode
// (cli/flag_modes.hpp). Every flag has a row.
enum : unsigned { kTraining = 1, kUpdateOnly = 2, kPrepareData = 4, kReport = 8 };

mlpo::cli::FlagModes run_flag_modes() {
  return mlpo::cli::FlagModes(
      {{kTraining, "training"},
       {kUpdateOnly, "--update-only"},
       {kPrepareData, "prepare-data"},
       {kReport, "report"}},
      {
          {"--plan", kTraining | kUpdateOnly},
          {"--tier-path", kTraining | kUpdateOnly},
          {"--save-plan", kTraining},
          {"--steps", kTraining | kUpdateOnly},
          {"--seed", kTraining | kUpdateOnly},
          {"--lr", kTraining | kUpdateOnly},
          {"--max-grad-norm", kTraining | kUpdateOnly},
          {"--threads", kTraining | kUpdateOnly},
          {"--log", kTraining | kUpdateOnly},
          {"--quiet", kTraining | kUpdateOnly},
          {"--beta1", kTraining | kUpdateOnly},
          {"--beta2", kTraining | kUpdateOnly},
          {"--eps", kTraining | kUpdateOnly},
          {"--weight-decay", kTraining | kUpdateOnly},
          {"--weight-decay-on", kTraining},
          {"--mode", kTraining | kUpdateOnly},
          {"--model", kTraining},
          {"--data", kTraining},
          {"--tokenizer", kTraining},
          {"--eval-data", kTraining},
          {"--eval-every", kTraining},
          {"--eval-tokens", kTraining},
          {"--token-bytes", kTraining},
          {"--seq-len", kTraining},
          {"--micro-batch", kTraining},
          {"--grad-accum", kTraining},
          {"--min-lr", kTraining},
          {"--warmup-steps", kTraining},
          {"--lr-decay-steps", kTraining},
          {"--checkpoint-dir", kTraining},
          {"--checkpoint-every", kTraining},
          {"--resume", kTraining},
          {"--export-safetensors", kTraining},
          {"--export-dtype", kTraining},
          {"--export-shard-size", kTraining},
          {"--export-tokenizer", kTraining},
          {"--init-from", kTraining},
          {"--state-dir", kTraining},
          {"--blas-threads", kTraining},
          {"--comm", kTraining},
          {"--backend", kTraining},
          {"--attention", kTraining},
          {"--gpu-memory-limit", kTraining},
          {"--host-memory-limit", kTraining},
          {"--param-offload", kTraining},
          {"--update-only", kUpdateOnly},
          {"--params", kUpdateOnly},
          {"--ranks", kUpdateOnly},
          {"--profile", kUpdateOnly},
          {"--state-hash", kUpdateOnly},
      },
      {
          {"--checkpoint-every", "--checkpoint-dir", "where the checkpoints are written"},
          {"--resume", "--checkpoint-dir", "where the checkpoints to resume from are"},
          {"--eval-every", "--eval-data", "the held-out tokens to evaluate on"},
          {"--eval-tokens", "--eval-data", "the held-out tokens to evaluate on"},
          {"--export-dtype", "--export-safetensors", "the export directory"},
          {"--export-shard-size", "--export-safetensors", "the export directory"},
          {"--export-tokenizer", "--export-safetensors", "the export directory"},
          {"--tier-path", "--plan", "the plan whose tiers it places"},
      });
}

// ---- Running each mode ------------------------------------------------------------------

int run_prepare_data(PrepareDataFlags& f) {
  mlpo::data::PrepareDataOptions& p = f.options;
  if (!f.model.empty()) p.model = mlpo::load_model(f.model);
  if (::isatty(STDERR_FILENO))
    p.progress = [](std::uint64_t done, std::uint64_t total) {
      std::fprintf(stderr, "\r\033[Kprepare-data: %.1f of %.1f MB (%.0f %%)", static_cast<double>(done) / 1e6,
                   static_cast<double>(total) / 1e6,
                   100.0 * static_cast<double>(done) / static_cast<double>(total));
    };
  auto r = mlpo::data::prepare_data(p);
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
  std::printf("prepare-data: %lld files, %lld tokens (%s) -> %s\n", static_cast<long long>(r.files),
              static_cast<long long>(r.tokens), r.tokenizer.c_str(), p.out.c_str());
  return 0;
}

int run_report(const ReportFlags& f) {
  mlpo::runlog::write_run_report(f.log, f.out, f.title);
  std::printf("report: %s\n", f.out.c_str());
  return 0;
}

// The update-only options from the flags; `adamw` holds training's AdamW flags.
mlpo::update_only::UpdateOnlyOptions update_only_options(const StepFlags& s, const UpdateOnlyFlags& f,
                                                         const mlpo::train::TrainOptions& adamw) {
  if (f.params_text.empty()) throw mlpo::Error("--update-only needs --params (total parameters, e.g. 1e9)");
  if (s.plan_path.empty()) throw mlpo::Error("--update-only needs --plan (a plan file from mlpo-tune)");
  mlpo::update_only::UpdateOnlyOptions u = f.options;
  u.params = static_cast<std::int64_t>(mlpo::parse_count(f.params_text, "--params"));
  u.plan = mlpo::load_plan(s.plan_path);
  mlpo::set_tier_paths(u.plan, s.tier_paths, "--tier-path");
  if (s.mode == "baseline") u.plan = mlpo::baseline_of(u.plan);
  if (!f.profile_path.empty()) {
    u.profile = mlpo::load_profile(f.profile_path);
    if (const std::string notes = mlpo::notes_from_elsewhere(*u.profile); !notes.empty())
      std::printf("note: profile %s: %s\n", f.profile_path.c_str(), notes.c_str());
  }
  u.steps = s.steps ? s.steps : 10;
  u.seed = s.seed;
  u.threads = s.threads;
  u.max_grad_norm = s.max_grad_norm;
  if (s.lr > 0) u.adam.lr = static_cast<float>(s.lr);
  u.adam.beta1 = adamw.beta1;
  u.adam.beta2 = adamw.beta2;
  u.adam.eps = adamw.eps;
  u.adam.weight_decay = adamw.weight_decay;
  return u;
}

// One rank's (or the whole local group's) update-only run; `rank0` logs and prints.
int update_only_ranked(const StepFlags& s, const mlpo::update_only::UpdateOnlyOptions& u, bool rank0) {
  const bool tty = ::isatty(STDOUT_FILENO) && !s.quiet;
  mlpo::runlog::RunLog log(rank0 ? s.log_path : std::string(), false);
  auto result = mlpo::update_only::run_update_only(u, [&](const mlpo::Json& rec) {
    log.write(rec);
    if (s.quiet) return;
    std::printf("step %lld/%lld  update %.3f s  backward %.3f s  stall %.3f s  hits %lld",
                rec["step"].get<long long>(), static_cast<long long>(u.steps), rec["update_s"].get<double>(),
                rec["backward_s"].get<double>(), rec["prefetch_stall_s"].get<double>(),
                rec["cache_hits"].get<long long>());
    if (rec.contains("bound_s"))
      std::printf("  bound %.3f s (x%.2f)", rec["bound_s"].get<double>(),
                  rec["achieved_over_bound"].get<double>());
    std::printf("\n");
    if (tty) std::fflush(stdout);
  });
  if (!rank0) return 0;
  std::printf("summary: %s\n", result.summary.dump().c_str());
  if (u.state_hash) std::printf("state-sha256: %s\n", result.state_sha256.c_str());
  return 0;
}

// Under a launcher (mpirun, srun) this process is one rank and rank 0 writes the log and prints;
// any rank's error ends the job with its message (run_ranked).
int run_update_only(const StepFlags& s, mlpo::update_only::UpdateOnlyOptions u) {
  std::unique_ptr<mlpo::comm::Communicator> comm;
  if (mlpo::comm::launch_env().multi_rank()) {
    comm = mlpo::comm::open_communicator(mlpo::comm::launch_env(), mlpo::comm::CommBackend::mpi);
    u.comm = comm.get();
  }
  auto body = [&] { return update_only_ranked(s, u, !comm || comm->rank() == 0); };
  return comm && comm->size() > 1 ? mlpo::comm::run_ranked(*comm, body) : body();
}

// The training options from the flags (every check before anything is opened).
mlpo::train::TrainOptions training_options(const CLI::App& app, const StepFlags& s, const TrainingFlags& f) {
  mlpo::train::TrainOptions t = f.options;
  if (f.model_name.empty() && t.init_from.empty())
    throw mlpo::Error(
        "--model is required (a preset such as tiny or small, a model JSON file or a Hugging Face "
        "config.json), "
        "unless --init-from names a checkpoint; see --help");
  if (t.data.empty())
    throw mlpo::Error("--data is required (a token file; make one with `mlpo-run prepare-data`)");
  if (!s.plan_path.empty() && mlpo::cli::given(app, "--state-dir"))
    throw mlpo::Error(
        "--state-dir: is the tier directory of the default plan, but --plan gives the tiers; drop "
        "--state-dir "
        "(or --plan)");
  if (!f.gpu_memory_limit.empty() && t.backend.rfind("cuda", 0) != 0)
    throw mlpo::Error("--gpu-memory-limit: limits GPU memory, but --backend is " + t.backend +
                      "; add --backend cuda or drop --gpu-memory-limit");
  t.model = f.model_name.empty() ? mlpo::hf::read_hf_model(t.init_from) : mlpo::load_model(f.model_name);
  t.export_shard_bytes = mlpo::parse_bytes(f.export_shard_size, "--export-shard-size");
  if (f.seq_len > 0) t.model.seq_len = f.seq_len;
  if (!s.plan_path.empty()) {
    t.plan = mlpo::load_plan(s.plan_path);
    mlpo::set_tier_paths(*t.plan, s.tier_paths, "--tier-path");
    if (s.mode == "baseline") t.plan = mlpo::baseline_of(*t.plan);
  }
  if (!f.save_plan.empty()) {
    if (!s.plan_path.empty())
      throw mlpo::Error("--save-plan: writes the default plan, but --plan gives one; drop --save-plan");
    mlpo::check_output_file(f.save_plan, "--save-plan");
    t.save_plan = f.save_plan;
  }
  t.steps = s.steps ? s.steps : 100;
  t.seed = s.seed;
  if (s.lr > 0) t.lr.max_lr = s.lr;
  t.max_grad_norm = s.max_grad_norm;
  t.threads = s.threads;
  if (!f.gpu_memory_limit.empty())
    t.gpu_memory_limit = mlpo::parse_bytes(f.gpu_memory_limit, "--gpu-memory-limit");
  if (!f.host_memory_limit.empty())
    t.host_memory_limit = mlpo::parse_bytes(f.host_memory_limit, "--host-memory-limit");
  return t;
}

std::string eta_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  return buf;
}

// Notes as they come (warnings and checkpoint throughput to stderr); each step to the log and,
// unless quiet, as a line with its ETA (and after a checkpoint its throughput, on stderr).
mlpo::train::TrainEvents print_events(const mlpo::train::TrainOptions& t, bool quiet,
                                      mlpo::runlog::RunLog& log, double& elapsed, std::int64_t& done) {
  mlpo::train::TrainEvents events;
  // Warnings (a resume without `latest`, ...) and checkpoint throughput to stderr.
  events.note = [](const std::string& line) {
    std::FILE* to = line.rfind("warning:", 0) == 0 || line.rfind("checkpoint:", 0) == 0 ? stderr : stdout;
    std::fprintf(to, "%s\n", line.c_str());
    std::fflush(to);
  };
  events.step = [&t, quiet, &log, &elapsed, &done](const mlpo::Json& rec) {
    log.write(rec);
    elapsed += rec["step_s"].get<double>();
    ++done;
    if (quiet) return;
    const long long step = rec["step"].get<long long>();
    if (rec.contains("checkpoint_bytes")) {  // all ranks' files over the slowest rank's time
      const double bytes = rec["checkpoint_bytes"].get<double>(), s = rec["checkpoint_s"].get<double>();
      std::fprintf(stderr, "checkpoint: step %lld: wrote %s in %s (%.2f GB/s)\n", step,
                   mlpo::format_bytes(bytes).c_str(), mlpo::format_seconds(s).c_str(),
                   s > 0 ? bytes / s / 1e9 : 0.0);
    }
    const double eta = elapsed / static_cast<double>(done) * static_cast<double>(t.steps - step);
    // Two significant digits below 10 tok/s (a 2B model on a CPU runs at ~0.5), whole numbers above.
    const double tps = rec["tokens_per_s"].get<double>();
    std::printf(
        "step %lld/%lld  loss %.4f  lr %.2e  %.*f tok/s  fwd %.2f s  bwd %.2f s  upd %.2f s  ckpt %.2f s "
        " ETA %s",
        step, static_cast<long long>(t.steps), rec["loss"].get<double>(), rec["lr"].get<double>(),
        tps < 10 ? 2 : 0, tps, rec["forward_s"].get<double>(), rec["backward_s"].get<double>(),
        rec["update_s"].get<double>(), rec["checkpoint_s"].get<double>(), eta_text(eta).c_str());
    if (rec.contains("eval_loss"))
      std::printf("  eval_loss %.4f (%.2f s)", rec["eval_loss"].get<double>(), rec["eval_s"].get<double>());
    std::printf("\n");
    std::fflush(stdout);
  };
  return events;
}

void print_summary(const mlpo::Json& summary) {
  if (summary.contains("first_loss"))
    std::printf("loss %.4f (step %lld) -> %.4f (step %lld)\n", summary["first_loss"].get<double>(),
                summary["first_step"].get<long long>(), summary["last_loss"].get<double>(),
                summary["last_step"].get<long long>());
  if (summary.contains("last_eval_loss"))
    std::printf("eval_loss %.4f (step %lld)\n", summary["last_eval_loss"].get<double>(),
                summary["last_step"].get<long long>());
  if (summary.contains("peak_rss_bytes")) {
    const double gib = 1024.0 * 1024 * 1024;
    std::printf("memory: peak RSS %.2f GiB (rank 0), optimizer state %.2f GiB (all ranks)",
                summary["peak_rss_bytes"].get<double>() / gib,
                summary["optimizer_state_bytes"].get<double>() / gib);
    if (summary.contains("host_memory_bytes"))
      std::printf(", host memory %.2f GiB", summary["host_memory_bytes"].get<double>() / gib);
    std::printf("\n");
  }
  std::printf("summary: %s\n", summary.dump().c_str());
}

// The command line again, with --resume (once): what continues an interrupted run.
std::string resume_command(int argc, char** argv) {
  std::string line;
  bool resume = false;
  for (int i = 0; i < argc; ++i) {
    const std::string word = argv[i];
    resume = resume || word == "--resume";
    const bool plain =
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/=:+@%") ==
        std::string::npos;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += (i ? " " : "") + (plain && !word.empty() ? word : quoted + "'");
  }
  return resume ? line : line + " --resume";
}

// After Ctrl-C or SIGTERM: where the run stopped and how to go on.
void print_interrupted(const mlpo::train::TrainResult& result, const mlpo::train::TrainOptions& t, int argc,
                       char** argv) {
  const long long last_step = result.summary["last_step"].get<long long>();
  std::string where = "interrupted after step " + std::to_string(last_step);
  if (last_step == 0) where = "interrupted before the first step";
  if (t.checkpoint_dir.empty())
    std::fprintf(stderr, "mlpo-run: %s; no checkpoint (no --checkpoint-dir), so nothing to resume\n",
                 where.c_str());
  else if (result.last_checkpoint.empty())
    std::fprintf(stderr, "mlpo-run: %s; no checkpoint written yet in %s; resume with: %s\n", where.c_str(),
                 t.checkpoint_dir.c_str(), resume_command(argc, argv).c_str());
  else
    std::fprintf(stderr, "mlpo-run: %s; the last checkpoint is %s; resume with: %s\n", where.c_str(),
                 result.last_checkpoint.c_str(), resume_command(argc, argv).c_str());
}

constexpr const char* kInterruptMessage =
    "\nmlpo-run: interrupt: finishing the step in progress, then stopping (Ctrl-C again stops at once; "
    "the last checkpoint stays loadable)\n";

// Every rank runs the same program; rank 0 prints. With several ranks, any rank's error ends
// the whole job with that rank's message (run_ranked), never a hang. Ctrl-C or SIGTERM ends the
// run after the step in progress (exit 128 + signal).
int run_training(mlpo::train::TrainOptions& t, const std::string& comm_name, const StepFlags& s, int argc,
                 char** argv) {
  auto comm = mlpo::comm::open_communicator(mlpo::comm::launch_env(),
                                            mlpo::comm::parse_comm_backend(comm_name, "--comm"));
  t.comm = comm.get();
  const bool rank0 = comm->rank() == 0;
  mlpo::InterruptGuard interrupts(true, rank0 ? kInterruptMessage : nullptr);
  t.stop_requested = [] { return mlpo::interrupt_signal() != 0; };
  auto body = [&] {
    mlpo::runlog::RunLog log(rank0 ? s.log_path : std::string(), t.resume);
    double elapsed = 0;
    std::int64_t done = 0;
    const mlpo::train::TrainEvents events = print_events(t, s.quiet, log, elapsed, done);
    auto result = mlpo::train::train(t, events);
    if (result.interrupted) {
      if (rank0) print_interrupted(result, t, argc, argv);
      return 128 + mlpo::interrupt_signal();
    }
    if (!rank0) return 0;
    print_summary(result.summary);
    return 0;
  };
  return comm->size() > 1 ? mlpo::comm::run_ranked(*comm, body) : body();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{mlpo::cli::kRunHelp, "mlpo-run"};
  mlpo::cli::add_version_flag(app);
  PrepareDataFlags prepare_flags;
  ReportFlags report_flags;
  StepFlags step_flags;
  TrainingFlags training_flags;
  UpdateOnlyFlags update_only_flags;
  CLI::App* prepare = add_prepare_data(app, prepare_flags);
  CLI::App* report = add_report(app, report_flags);
  add_training_flags(app, training_flags);  // first: its groups lead --help
  add_step_flags(app, step_flags);
  add_training_run_flags(app, training_flags);
  add_update_only_flags(app, update_only_flags, step_flags.mode);
  set_help_groups(app);
  const mlpo::cli::FlagModes flag_modes = run_flag_modes();

  return mlpo::cli::run(app, argc, argv, [&] {
    const unsigned mode = prepare->parsed()               ? kPrepareData
                          : report->parsed()              ? kReport
                          : update_only_flags.update_only ? kUpdateOnly
                                                          : kTraining;
    flag_modes.check(app, mode);
    if (step_flags.mode == "baseline" && step_flags.plan_path.empty())
      throw mlpo::Error(
          "--mode baseline: needs --plan (the baseline is made from a plan: its first tier, fp32 gradients "
          "flushed, ascending order); add --plan plan.json");
    if (!step_flags.log_path.empty()) mlpo::check_output_file(step_flags.log_path, "--log");
    if (mode == kPrepareData) return run_prepare_data(prepare_flags);
    if (mode == kReport) return run_report(report_flags);
    if (mode == kUpdateOnly) {
      return run_update_only(step_flags,
                             update_only_options(step_flags, update_only_flags, training_flags.options));
    }
    mlpo::train::TrainOptions options = training_options(app, step_flags, training_flags);
    return run_training(options, training_flags.comm_name, step_flags, argc, argv);
  });
}
