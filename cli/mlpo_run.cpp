// mlpo-run: execute pre-training (or the update phase alone) under a plan.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cli/cli_main.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "executor/offload/update_only_run.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "mlpo-run: run pre-training with a plan from mlpo-tune: forward and backward on the compute\n"
      "device, then the offloaded optimizer update streaming state from every storage tier.\n\n"
      "--update-only runs the real update phase without a model: synthetic bf16 gradients (a pure\n"
      "function of seed, step and element index), real tier files and io_uring, the plan's cache,\n"
      "order and concurrency limits, fused AdamW. --ranks R forks R rank processes that share the\n"
      "tiers, each owning 1/R of the state. --state-hash prints a digest of the final optimizer\n"
      "state that is the same under every plan.",
      "mlpo-run"};
  mlpo::cli::add_version_flag(app);
  bool update_only = false;
  std::string params_text, plan_path, profile_path, log_path, mode = "mlp";
  mlpo::offload::UpdateOnlyOptions opts;
  bool quiet = false;
  app.add_flag("--update-only", update_only, "Run only the offloaded update phase, with synthetic gradients")->required();
  app.add_option("--params", params_text, "Total parameters over all ranks (e.g. 1000000000, 1e9, 500M, 1B)")
      ->required();
  app.add_option("--plan", plan_path, "Plan file (mlpo.plan/1) from mlpo-tune or written by hand")->required()->check(CLI::ExistingFile);
  app.add_option("--ranks", opts.ranks, "Rank processes on this node, sharing the tiers")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--steps", opts.steps, "Update steps to run")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  app.add_option("--mode", mode, "mlp: the plan as written; baseline: its ZeRO-3-offload baseline (first tier, fp32 gradients flushed, ascending, no cache, no limit)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mlp", "baseline"}));
  app.add_option("--seed", opts.seed, "Seed of the synthetic gradients and initial weights")->capture_default_str();
  app.add_option("--threads", opts.threads, "AdamW threads per rank (default: cores / ranks)");
  app.add_option("--max-grad-norm", opts.max_grad_norm, "Global gradient-norm clipping threshold (0 = off)")->capture_default_str();
  app.add_option("--lr", opts.adam.lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--profile", profile_path, "Profile (mlpo.profile/1) for the physical bound of each step")->check(CLI::ExistingFile);
  app.add_flag("--state-hash", opts.state_hash, "Print state-sha256: <hex> over all ranks' final p, m, v");
  app.add_option("--log", log_path, "Write one JSON object per step to this file (JSON lines)");
  app.add_flag("--quiet", quiet, "Print only the summary");

  return mlpo::cli::run(app, argc, argv, [&] {
    opts.params = static_cast<std::int64_t>(mlpo::parse_count(params_text, "--params"));
    opts.plan = mlpo::load_plan(plan_path);
    if (mode == "baseline") opts.plan = mlpo::baseline_of(opts.plan);
    if (!profile_path.empty()) opts.profile = mlpo::load_profile(profile_path);
    std::ofstream log;
    if (!log_path.empty()) {
      log.open(log_path, std::ios::trunc);
      if (!log) throw mlpo::Error("--log " + log_path + ": cannot open for writing; check the directory exists and is writable");
    }
    const bool tty = ::isatty(STDOUT_FILENO) && !quiet;
    auto result = mlpo::offload::run_update_only(opts, [&](const mlpo::Json& rec) {
      if (log) log << rec.dump() << "\n" << std::flush;
      if (!quiet) {
        std::printf("step %lld/%lld  update %.3f s  backward %.3f s  stall %.3f s  hits %lld",
                    rec["step"].get<long long>(), static_cast<long long>(opts.steps), rec["update_s"].get<double>(),
                    rec["backward_s"].get<double>(), rec["prefetch_stall_s"].get<double>(), rec["cache_hits"].get<long long>());
        if (rec.contains("bound_s")) std::printf("  bound %.3f s (x%.2f)", rec["bound_s"].get<double>(), rec["achieved_over_bound"].get<double>());
        std::printf("\n");
        if (tty) std::fflush(stdout);
      }
    });
    std::printf("summary: %s\n", result.summary.dump().c_str());
    if (opts.state_hash) std::printf("state-sha256: %s\n", result.state_sha256.c_str());
    return 0;
  });
}
