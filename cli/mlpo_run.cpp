// mlpo-run: execute pre-training (or the update phase alone) under a plan.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/cli_main.hpp"
#include "cli/flag_modes.hpp"
#include "cli/flag_values.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/path_checks.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/launch_env.hpp"
#include "executor/comm/open_communicator.hpp"
#include "executor/update_only/update_only_run.hpp"
#include "executor/train/hf_checkpoint.hpp"
#include "executor/train/prepare_data.hpp"
#include "executor/train/run_log.hpp"
#include "executor/train/run_report.hpp"
#include "executor/train/training_loop.hpp"

namespace {

std::string eta_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using mlpo::cli::Precision;
  CLI::App app{
      "mlpo-run: pre-train a LLaMA-style model with its optimizer state offloaded under a plan from\n"
      "mlpo-tune: forward and backward on the compute device (--backend cpu, or cuda: a GPU), each\n"
      "layer's bf16 gradients handed to host memory as backward finishes it, gradient accumulation\n"
      "over micro-batches, global-norm clipping, then the offloaded AdamW update streaming (p, m, v)\n"
      "from every storage tier, and the new bf16 weights back to the device.\n\n"
      "  mlpo-run prepare-data --input FILE|DIR... --out tokens.bin [--tokenizer tokenizer.model] [--model "
      "M]\n"
      "  mlpo-run report run.jsonl --out report.svg|report.html [--title TEXT]\n"
      "  mlpo-run --model NAME|FILE --data FILE|DIR... [--plan plan.json] [--steps N] [--micro-batch B]\n"
      "           [--grad-accum A] [--seed S] [--log run.jsonl] [--checkpoint-dir DIR]\n"
      "           [--checkpoint-every K] [--resume] [--init-from HF_DIR] [--export-safetensors DIR|FILE]\n"
      "           [--export-dtype bf16|fp32] [--export-shard-size SIZE] [--export-tokenizer FILE...] "
      "[--param-offload]\n"
      "           [--backend cpu|cuda|cuda:N] [--gpu-memory-limit SIZE] [--tokenizer tokenizer.model]\n"
      "           [--eval-data FILE|DIR... [--eval-every N] [--eval-tokens T]]\n"
      "  mpirun -np R mlpo-run --model ... [--comm auto|mpi|single|nccl]\n"
      "  mlpo-run --update-only --params N --plan plan.json [--ranks R] [--state-hash]\n\n"
      "Data: token files made by prepare-data (byte-level, vocab 256, or a SentencePiece --tokenizer), flat\n"
      "uint16/uint32 files (--token-bytes) or llm.c shards (256 int32 header, magic 20240520); several "
      "files\n"
      "or directories of them are one data set, memory-mapped. Sequences are sampled at positions drawn\n"
      "from --seed and never straddle files; tokens >= the model's vocab are an error, as is data made\n"
      "with a larger tokenizer than the model's vocab. --eval-data: validation loss (forward only) on\n"
      "its first --eval-tokens tokens as fixed sequences, every --eval-every steps and after the last.\n"
      "No --plan: a default plan is made and printed (one disk tier under --state-dir, ./mlpo-state).\n"
      "Schedule: linear warm-up over --warmup-steps to --lr, cosine decay to --min-lr at\n"
      "--lr-decay-steps (default: --steps). AdamW (decoupled weight decay on every matrix, not on the\n"
      "RMSNorm gains; --weight-decay-on all decays those too).\n"
      "Checkpoints (--checkpoint-dir): every --checkpoint-every steps and at the end: HF-named\n"
      "safetensors + fp32 p, m, v (one file set per rank, each a range of the global order) +\n"
      "step, seed and data position, written to a temp directory, fsync'd, renamed; the previous\n"
      "one is kept until the new one is complete.\n"
      "--resume continues bitwise as if never interrupted, under any plan and on any number of ranks;\n"
      "without `latest` it takes the newest complete ckpt-N; with no checkpoint yet it starts from\n"
      "step 0. The manifest and every file are checked (CRC32C): a damaged checkpoint exits 2.\n"
      "Same results need the same --blas-threads\n"
      "(OpenBLAS thread count).\n"
      "Data parallelism (ZeRO-3): launch with mpirun or srun (`mpirun -np 4 mlpo-run ...`); each rank\n"
      "owns 1/ranks of the weights, gradients and optimizer state, gathers each layer's weights when\n"
      "needed and reduce-scatters its gradients; --grad-accum is per rank, so a step holds ranks x\n"
      "--grad-accum micro-batches. With 1, 2, 4, ... ranks the losses and weights are bitwise those of\n"
      "one process with the same global batch. The plan must be for the launched shape (mlpo-tune\n"
      "--nodes --gpus-per-node); checkpoints (one file set per rank + a manifest) resume on any\n"
      "number of ranks; rank 0 prints. --param-offload keeps a single process's weights in host\n"
      "memory and streams them to the device one part at a time (bitwise the same results).\n"
      "GPU (--backend cuda): bf16 compute on the GPU (cuBLASLt, fused kernels); transfers overlap it on\n"
      "copy streams from pinned host memory. The GPU memory the run needs is checked before anything\n"
      "is allocated (a shortfall names bytes needed and available, and suggests --param-offload, which\n"
      "keeps only two layers' weights and, with --grad-accum 1, one layer's gradient on the GPU).\n"
      "Without a usable GPU --backend cuda exits 2 naming CUDA's reason. docs/cuda.md.\n"
      "Hugging Face: --init-from DIR starts from a LLaMA checkpoint directory (config.json + "
      "model.safetensors or\n"
      "index + shards; bf16, fp16 or fp32), streamed tensor by tensor into each rank's tiers; "
      "--export-safetensors\n"
      "DIR writes one that transformers' LlamaForCausalLM.from_pretrained loads (docs/formats.md).\n"
      "Per step it prints step, loss, tokens/s, phase times and ETA, and --log writes one JSON object\n"
      "per step (docs/formats.md). Bad input exits 2 with one line and overwrites nothing: every number\n"
      "is checked against the range --help shows (FLOAT:>0 ...; NaN and inf never pass), and a flag the\n"
      "mode does not read (--data with --update-only, --checkpoint-every without --checkpoint-dir) is an\n"
      "error, as is --mode baseline without --plan.\n\n"
      "--update-only runs the real update phase without a model: synthetic bf16 gradients (a pure\n"
      "function of seed, step and element index), real tier files and io_uring, the plan's cache,\n"
      "order and concurrency limits, fused AdamW. --ranks R forks R rank processes that share the\n"
      "tiers, each owning 1/R of the state. --state-hash prints a digest of the final optimizer\n"
      "state that is the same under every plan. See docs/training.md.",
      "mlpo-run"};
  mlpo::cli::add_version_flag(app);

  // prepare-data
  auto* prepare = app.add_subcommand(
      "prepare-data", "Tokenize files (byte-level, or a SentencePiece --tokenizer) into an llm.c shard");
  mlpo::train::PrepareDataOptions p;
  std::string prepare_model;
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
  prepare->add_option("--model", prepare_model,
                      "Model preset or file the data is for: its vocab must hold the tokenizer's");
  prepare
      ->add_option("--threads", p.threads,
                   "Tokenizer threads (default: all cores); the output is the same for any count")
      ->check(mlpo::cli::whole_in(1, 4096));

  // report
  auto* report = app.add_subcommand(
      "report",
      "Draw a run log as one chart: loss (and eval_loss), tokens/s, phase seconds, tier GB and GB/s");
  std::string report_log, report_out, report_title;
  report->add_option("log", report_log, "Run log: the JSON-lines file of mlpo-run --log")->required();
  report->add_option("--out", report_out, "Report to write: .svg, or .html (the SVG in a page)")->required();
  report->add_option("--title", report_title,
                     "Title line, e.g. the model and plan (default: the log's file name)");

  // shared
  std::string plan_path, log_path;
  std::int64_t steps = 0;
  std::uint64_t seed = 1;
  double lr = 0, max_grad_norm = 1.0;
  unsigned threads = 0;
  bool quiet = false;
  app.add_option("--plan", plan_path,
                 "Plan file (mlpo.plan/1) from mlpo-tune or written by hand; training without it makes a "
                 "default plan")
      ->check(CLI::ExistingFile);
  app.add_option("--steps", steps, "Optimizer steps (default: 100 training, 10 update-only)")
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 30));
  app.add_option("--seed", seed,
                 "Seed of the model's initial weights and of data sampling (update-only: synthetic data)")
      ->capture_default_str()
      ->check(mlpo::cli::unsigned_whole());
  app.add_option("--lr", lr, "Peak AdamW learning rate (default: 1e-3 training, 1e-4 update-only)")
      ->check(mlpo::cli::positive_real(Precision::fp32));
  app.add_option("--max-grad-norm", max_grad_norm, "Global gradient-norm clipping threshold (0 = off)")
      ->capture_default_str()
      ->check(mlpo::cli::non_negative_real());
  app.add_option("--threads", threads, "CPU threads for the compute ops and AdamW (default: all cores)")
      ->check(mlpo::cli::whole_in(1, 4096));
  app.add_option("--log", log_path, "Write one JSON object per step to this file (JSON lines)");
  app.add_flag("--quiet", quiet, "Print only notes and the summary");

  // training
  mlpo::train::TrainOptions t;
  std::string model_name;
  std::int64_t seq_len = 0;
  app.add_option("--model", model_name, "Model preset (tiny, small, 1b, ...) or mlpo.model/1 JSON file");
  app.add_option(
      "--data", t.data,
      "Token files or directories of them (prepare-data's, flat uint16/uint32, llm.c shards): one data set");
  app.add_option(
      "--tokenizer", t.tokenizer,
      "The SentencePiece model the data was made with: checked against the model's vocab and the data");
  app.add_option("--eval-data", t.eval_data,
                 "Held-out token files or directories: validation loss (eval_loss in the log)");
  app.add_option("--eval-every", t.eval_every, "Validation loss every N steps (0 = only after the last step)")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  app.add_option("--eval-tokens", t.eval_tokens,
                 "Tokens of --eval-data evaluated, as fixed sequences (0 = all of it)")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, std::int64_t{1} << 50));
  app.add_option("--token-bytes", t.token_bytes, "Width of a flat (headerless) token file's tokens")
      ->capture_default_str()
      ->check(CLI::IsMember({2, 4}));
  app.add_option("--seq-len", seq_len, "Training sequence length (default: the model's seq_len)")
      ->check(mlpo::cli::whole_in(2, std::int64_t{1} << 20));
  app.add_option("--micro-batch", t.micro_batch, "Sequences per forward/backward")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, 1 << 16));
  app.add_option("--grad-accum", t.grad_accum, "Micro-batches per optimizer step")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, 1 << 16));
  app.add_option("--min-lr", t.lr.min_lr, "Learning rate at the end of the cosine decay (at most --lr)")
      ->capture_default_str()
      ->check(mlpo::cli::non_negative_real(Precision::fp32));
  app.add_option("--warmup-steps", t.lr.warmup_steps, "Steps of linear warm-up")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  app.add_option("--lr-decay-steps", t.lr.decay_end,
                 "Step at which the cosine reaches --min-lr (0 = --steps)")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  app.add_option("--beta1", t.beta1, "AdamW beta1 (also update-only)")
      ->capture_default_str()
      ->check(mlpo::cli::fraction_below_one());
  app.add_option("--beta2", t.beta2, "AdamW beta2 (also update-only)")
      ->capture_default_str()
      ->check(mlpo::cli::fraction_below_one());
  app.add_option("--eps", t.eps, "AdamW epsilon (also update-only)")
      ->capture_default_str()
      ->check(mlpo::cli::positive_real(Precision::fp32));
  app.add_option("--weight-decay", t.weight_decay, "AdamW decoupled weight decay (also update-only)")
      ->capture_default_str()
      ->check(mlpo::cli::non_negative_real(Precision::fp32));
  app.add_option("--weight-decay-on", t.weight_decay_on,
                 "Weights the decay applies to: matrices (all but the RMSNorm gains, as Hugging Face and "
                 "Megatron) or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"matrices", "all"}));
  app.add_option("--checkpoint-dir", t.checkpoint_dir,
                 "Directory of checkpoints (ckpt-<step>/ and a `latest` pointer)");
  app.add_option("--checkpoint-every", t.checkpoint_every, "Checkpoint every K steps (0 = only at the end)")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, std::int64_t{1} << 30));
  app.add_flag("--resume", t.resume,
               "Continue from the latest checkpoint in --checkpoint-dir (under this plan)");
  app.add_option(
      "--export-safetensors", t.export_safetensors,
      "Write the final weights: DIR = a Hugging Face LLaMA directory (config.json, safetensors shards + "
      "index, tokenizer files); a path ending in .safetensors = one file of bf16 weights (HF names)");
  std::string export_shard_size = "5GB";
  app.add_option("--export-dtype", t.export_dtype,
                 "Directory export: bf16 (the weights trained with) or fp32 (the master weights)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp32"}));
  app.add_option("--export-shard-size", export_shard_size,
                 "Directory export: tensor bytes per safetensors shard at most (GB = 1e9, GiB = 2^30)")
      ->capture_default_str();
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
  app.add_option("--blas-threads", t.blas_threads,
                 "OpenBLAS threads (default: all cores); results are bitwise reproducible for a fixed count")
      ->check(mlpo::cli::whole_in(1, 4096));
  std::string comm_name = "auto";
  app.add_option("--comm", comm_name,
                 "Communicator between data-parallel ranks: auto (MPI when launched by mpirun/srun, else one "
                 "process), mpi, single (one process; an error under a launcher of several ranks), nccl (GPU "
                 "buffers: "
                 "with --backend cuda on one rank, the step's reductions run through NCCL)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "mpi", "single", "nccl"}));
  app.add_option(
         "--backend", t.backend,
         "Compute backend: cpu, cuda (this process's GPU: device 0, or the local rank's under a launcher) or "
         "cuda:N (GPU N). Results differ between cpu and cuda within bf16 rounding (docs/cuda.md)")
      ->capture_default_str();
  std::string gpu_memory_limit;
  app.add_option("--gpu-memory-limit", gpu_memory_limit,
                 "--backend cuda: plan for at most this much GPU memory (e.g. 8GiB) instead of the device's "
                 "free memory; "
                 "the up-front check then refuses a run that would need more (to try parameter offload on a "
                 "large GPU)")
      ->check(mlpo::cli::byte_size());
  app.add_flag(
      "--param-offload", t.param_offload,
      "One process: keep the bf16 weights in host memory and stream them to the device one part (layer) at "
      "a time, two parts resident (parameter offload); with --grad-accum 1 the gradients also leave the "
      "device "
      "layer by layer as backward produces them; results are bitwise those without it");

  // update-only
  bool update_only = false;
  std::string params_text, profile_path, mode = "mlp";
  mlpo::update_only::UpdateOnlyOptions u;
  app.add_flag("--update-only", update_only, "Run only the offloaded update phase, with synthetic gradients");
  app.add_option("--params", params_text, "Update-only: total parameters over all ranks (e.g. 1e9, 500M, 1B)")
      ->check(mlpo::cli::count_at_least(1));
  app.add_option("--ranks", u.ranks, "Update-only: rank processes on this node, sharing the tiers")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, 256));
  app.add_option("--mode", mode,
                 "mlp: the plan as written; baseline: its ZeRO-3-offload baseline (first tier, fp32 "
                 "gradients flushed, ascending, no cache, no limit)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mlp", "baseline"}));
  app.add_option("--profile", profile_path,
                 "Update-only: profile (mlpo.profile/1) for the physical bound of each step")
      ->check(CLI::ExistingFile);
  app.add_flag("--state-hash", u.state_hash,
               "Update-only: print state-sha256: <hex> over all ranks' final p, m, v");

  // Which mode reads which flag: one the chosen mode would ignore is an error naming the mode
  // (cli/flag_modes.hpp). Every flag has a row.
  enum : unsigned { kTraining = 1, kUpdateOnly = 2, kPrepareData = 4, kReport = 8 };
  const mlpo::cli::FlagModes flag_modes(
      {{kTraining, "training"},
       {kUpdateOnly, "--update-only"},
       {kPrepareData, "prepare-data"},
       {kReport, "report"}},
      {
          {"--plan", kTraining | kUpdateOnly},
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
          {"--gpu-memory-limit", kTraining},
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
      });

  return mlpo::cli::run(app, argc, argv, [&] {
    flag_modes.check(app, prepare->parsed()  ? kPrepareData
                          : report->parsed() ? kReport
                          : update_only      ? kUpdateOnly
                                             : kTraining);
    if (mode == "baseline" && plan_path.empty())
      throw mlpo::Error(
          "--mode baseline: needs --plan (the baseline is made from a plan: its first tier, fp32 gradients "
          "flushed, ascending order); add --plan plan.json");
    if (!log_path.empty()) mlpo::check_output_file(log_path, "--log");
    if (prepare->parsed()) {
      if (!prepare_model.empty()) p.model = mlpo::load_model(prepare_model);
      if (::isatty(STDERR_FILENO))
        p.progress = [](std::uint64_t done, std::uint64_t total) {
          std::fprintf(stderr, "\r\033[Kprepare-data: %.1f of %.1f MB (%.0f %%)",
                       static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6,
                       100.0 * static_cast<double>(done) / static_cast<double>(total));
        };
      auto r = mlpo::train::prepare_data(p);
      if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
      std::printf("prepare-data: %lld files, %lld tokens (%s) -> %s\n", static_cast<long long>(r.files),
                  static_cast<long long>(r.tokens), r.tokenizer.c_str(), p.out.c_str());
      return 0;
    }
    if (report->parsed()) {
      mlpo::train::write_run_report(report_log, report_out, report_title);
      std::printf("report: %s\n", report_out.c_str());
      return 0;
    }
    const bool tty = ::isatty(STDOUT_FILENO) && !quiet;
    if (update_only && mlpo::comm::launch_env().multi_rank())
      throw mlpo::Error(
          "--update-only starts its rank processes itself (--ranks R); run it without mpirun/srun");
    if (update_only) {
      if (params_text.empty()) throw mlpo::Error("--update-only needs --params (total parameters, e.g. 1e9)");
      if (plan_path.empty()) throw mlpo::Error("--update-only needs --plan (a plan file from mlpo-tune)");
      u.params = static_cast<std::int64_t>(mlpo::parse_count(params_text, "--params"));
      u.plan = mlpo::load_plan(plan_path);
      if (mode == "baseline") u.plan = mlpo::baseline_of(u.plan);
      if (!profile_path.empty()) u.profile = mlpo::load_profile(profile_path);
      u.steps = steps ? steps : 10;
      u.seed = seed;
      u.threads = threads;
      u.max_grad_norm = max_grad_norm;
      if (lr > 0) u.adam.lr = static_cast<float>(lr);
      u.adam.beta1 = t.beta1;
      u.adam.beta2 = t.beta2;
      u.adam.eps = t.eps;
      u.adam.weight_decay = t.weight_decay;
      mlpo::train::RunLog log(log_path, false);
      auto result = mlpo::update_only::run_update_only(u, [&](const mlpo::Json& rec) {
        log.write(rec);
        if (!quiet) {
          std::printf("step %lld/%lld  update %.3f s  backward %.3f s  stall %.3f s  hits %lld",
                      rec["step"].get<long long>(), static_cast<long long>(u.steps),
                      rec["update_s"].get<double>(), rec["backward_s"].get<double>(),
                      rec["prefetch_stall_s"].get<double>(), rec["cache_hits"].get<long long>());
          if (rec.contains("bound_s"))
            std::printf("  bound %.3f s (x%.2f)", rec["bound_s"].get<double>(),
                        rec["achieved_over_bound"].get<double>());
          std::printf("\n");
          if (tty) std::fflush(stdout);
        }
      });
      std::printf("summary: %s\n", result.summary.dump().c_str());
      if (u.state_hash) std::printf("state-sha256: %s\n", result.state_sha256.c_str());
      return 0;
    }

    if (model_name.empty() && t.init_from.empty())
      throw mlpo::Error(
          "--model is required (a preset such as tiny or small, a model JSON file or a Hugging Face "
          "config.json), "
          "unless --init-from names a checkpoint; see --help");
    if (t.data.empty())
      throw mlpo::Error("--data is required (a token file; make one with `mlpo-run prepare-data`)");
    if (!plan_path.empty() && mlpo::cli::given(app, "--state-dir"))
      throw mlpo::Error(
          "--state-dir: is the tier directory of the default plan, but --plan gives the tiers; drop "
          "--state-dir "
          "(or --plan)");
    if (!gpu_memory_limit.empty() && t.backend.rfind("cuda", 0) != 0)
      throw mlpo::Error("--gpu-memory-limit: limits GPU memory, but --backend is " + t.backend +
                        "; add --backend cuda or drop --gpu-memory-limit");
    t.model = model_name.empty() ? mlpo::train::read_hf_model(t.init_from) : mlpo::load_model(model_name);
    t.export_shard_bytes = mlpo::parse_bytes(export_shard_size, "--export-shard-size");
    if (seq_len > 0) t.model.seq_len = seq_len;
    if (!plan_path.empty()) {
      t.plan = mlpo::load_plan(plan_path);
      if (mode == "baseline") t.plan = mlpo::baseline_of(*t.plan);
    }
    t.steps = steps ? steps : 100;
    t.seed = seed;
    if (lr > 0) t.lr.max_lr = lr;
    t.max_grad_norm = max_grad_norm;
    t.threads = threads;
    if (!gpu_memory_limit.empty())
      t.gpu_memory_limit = mlpo::parse_bytes(gpu_memory_limit, "--gpu-memory-limit");
    if (const char* ms = std::getenv("MLPO_TEST_SLOW_CHECKPOINT_MS"))
      t.checkpoint_pause = std::chrono::milliseconds(std::atoll(ms));
    if (const char* path = std::getenv("MLPO_TRACE_PHASES")) t.trace_path = path;

    // Every rank runs the same program; rank 0 prints. With several ranks, any rank's error
    // ends the whole job with that rank's message (run_ranked), never a hang.
    auto comm = mlpo::comm::open_communicator(mlpo::comm::launch_env(),
                                              mlpo::comm::parse_comm_backend(comm_name, "--comm"));
    t.comm = comm.get();
    const bool rank0 = comm->rank() == 0;
    auto body = [&] {
      mlpo::train::RunLog log(rank0 ? log_path : std::string(), t.resume);
      double elapsed = 0;
      std::int64_t done = 0;
      mlpo::train::TrainEvents events;
      events.note = [&](const std::string& line) {  // warnings (a resume without `latest`, ...) to stderr
        std::FILE* to = line.rfind("warning:", 0) == 0 ? stderr : stdout;
        std::fprintf(to, "%s\n", line.c_str());
        std::fflush(to);
      };
      events.step = [&](const mlpo::Json& rec) {
        log.write(rec);
        elapsed += rec["step_s"].get<double>();
        ++done;
        if (quiet) return;
        const long long step = rec["step"].get<long long>();
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
          std::printf("  eval_loss %.4f (%.2f s)", rec["eval_loss"].get<double>(),
                      rec["eval_s"].get<double>());
        std::printf("\n");
        std::fflush(stdout);
      };
      auto result = mlpo::train::train(t, events);
      if (!rank0) return 0;
      if (result.summary.contains("first_loss"))
        std::printf("loss %.4f (step %lld) -> %.4f (step %lld)\n", result.summary["first_loss"].get<double>(),
                    result.summary["first_step"].get<long long>(), result.summary["last_loss"].get<double>(),
                    result.summary["last_step"].get<long long>());
      if (result.summary.contains("last_eval_loss"))
        std::printf("eval_loss %.4f (step %lld)\n", result.summary["last_eval_loss"].get<double>(),
                    result.summary["last_step"].get<long long>());
      std::printf("summary: %s\n", result.summary.dump().c_str());
      return 0;
    };
    return comm->size() > 1 ? mlpo::comm::run_ranked(*comm, body) : body();
  });
}
