// mlpo-tune: describe a model's costs on a cluster shape; search the plan space for the
// fastest plan on a profiled machine (analytic prune, SimGrid ranking) and write it; or hold
// a measured run log against the prediction (--validate).
#include <unistd.h>

#include <cstdio>

#include "cli/cli_main.hpp"
#include "cli/flag_modes.hpp"
#include "cli/flag_values.hpp"
#include "core/accounting.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/path_checks.hpp"
#include "core/units.hpp"
#include "tuner/explain.hpp"
#include "tuner/search.hpp"
#include "tuner/simulate_plan.hpp"
#include "tuner/timeline_svg.hpp"
#include "tuner/validate_run.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "mlpo-tune: plan how a model's optimizer state is placed on this machine's storage tiers.\n"
      "  mlpo-tune --model M --profile P [shape] [--out plan.json] [--explain] [--timeline t.svg]\n"
      "      searches tier subsets and fractions, per-tier concurrency limits, subgroup size, host\n"
      "      cache, buffers and prefetch depth, update order and gradient policy; keeps plans that\n"
      "      fit host memory, tier capacity and GPU memory; prunes with the analytic model and ranks\n"
      "      the best with a SimGrid simulation; writes the fastest with its predicted breakdown,\n"
      "      the top-K alternatives and the baseline's prediction.\n"
      "  mlpo-tune --model M --describe      prints the model's parameter, memory and FLOP accounting.\n"
      "  mlpo-tune --validate run.jsonl --plan plan.json --profile P\n"
      "      prints predicted versus measured per phase and tier, with the relative error (--json: JSON).\n"
      "  mlpo-tune --simulate plan.json --profile P [shape] [--json] [--timeline t.svg]\n"
      "      predicts exactly that plan (any subgroup size, cache, buffers, limits): per phase with its\n"
      "      bound resource, per tier, and whether it fits; shape flags override the plan's cluster.\n"
      "Numbers are checked against the ranges --help shows (INT:[1,1048576] ...), and a flag the mode does\n"
      "not read (--plan without --validate, --explain with --describe) is an error.\n"
      "See docs/simulator.md for the models and the search space.",
      "mlpo-tune"};
  mlpo::cli::add_version_flag(app);
  std::string model, profile_path, out_path, timeline_path, validate_path, plan_path, budget_text,
      simulate_path, baseline_tier;
  bool describe = false, json = false, explain = false, update_only = false, quiet = false,
       param_offload = false;
  int top = 3, jobs = 2, simulate_top = 8;
  double backbone = 0;
  mlpo::ClusterShape shape;
  app.add_option(
      "--model", model,
      "Model preset name (e.g. llama2-70b, paper-40b, mlpo-280b, small) or mlpo.model/1 JSON file");
  app.add_option("--profile", profile_path, "Machine profile (mlpo.profile/1 JSON, from mlpo-profile)");
  app.add_flag("--describe", describe, "Print the model's parameter, memory and FLOP accounting and exit");
  app.add_flag("--json", json,
               "Print machine-readable JSON instead of text (--describe, --simulate, --validate, and the "
               "search: the plan)");
  app.add_option("--nodes", shape.nodes, "Number of nodes")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--gpus-per-node", shape.gpus_per_node, "GPUs (ranks) per node")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--micro-batch", shape.micro_batch, "Sequences per rank per micro-step")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--seq-len", shape.seq_len, "Sequence length (default: the model's)")
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--grad-accum", shape.grad_accum, "Gradient accumulation steps")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option(
         "--host-memory-budget", budget_text,
         "Host memory per node plans may use, e.g. 400GiB (default: the profile's host.available_bytes)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--out", out_path, "Write the chosen plan (mlpo.plan/1 JSON) here");
  app.add_flag(
      "--explain", explain,
      "Explain the choice: bound resource per phase, tier split vs bandwidth, what each principle saves");
  app.add_option("--timeline", timeline_path,
                 "Write an SVG Gantt chart of the chosen plan's simulated iteration (node 0)");
  app.add_option("--top", top, "Alternatives kept in the plan file")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(0, 50));
  app.add_flag(
      "--update-only", update_only,
      "Predict the update phase alone (what `mlpo-run --update-only` measures); skips the GPU memory check");
  app.add_option("--jobs", jobs, "SimGrid simulations run at once (child processes)")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, 256));
  app.add_option("--simulate-top", simulate_top, "Analytic survivors ranked with SimGrid")
      ->capture_default_str()
      ->check(mlpo::cli::whole_in(1, 1000));
  app.add_option("--remote-backbone-gbps", backbone,
                 "Cluster-wide bandwidth of remote tiers per direction, GB/s (default: no shared limit)")
      ->check(mlpo::cli::real_in({0, 1e6, true}));
  app.add_option("--validate", validate_path,
                 "Compare a run log (JSON lines from mlpo-run) with the prediction for --plan");
  app.add_option("--plan", plan_path, "With --validate: the plan the run used");
  app.add_option(
      "--simulate", simulate_path,
      "Predict this plan (mlpo.plan/1 JSON) on --profile: per phase, per tier, bound resource, fit");
  app.add_option("--baseline-tier", baseline_tier,
                 "Tier the baseline (ZeRO-3 offload) streams from (default: the node-local NVMe tier, else "
                 "the fastest streamed one)");
  app.add_flag("--param-offload", param_offload,
               "One rank: count the weights as `mlpo-run --param-offload` holds them (host memory, streamed "
               "per layer)");
  app.add_flag("--quiet", quiet, "Print only errors and warnings");

  // Which mode reads which flag: one the chosen mode would ignore is an error naming the mode
  // (cli/flag_modes.hpp). Every flag has a row.
  enum : unsigned { kSearch = 1, kDescribe = 2, kValidate = 4, kSimulate = 8 };
  const mlpo::cli::FlagModes flag_modes({{kSearch, "the plan search"},
                                         {kDescribe, "--describe"},
                                         {kValidate, "--validate"},
                                         {kSimulate, "--simulate"}},
                                        {
                                            {"--model", kSearch | kDescribe | kValidate | kSimulate},
                                            {"--profile", kSearch | kValidate | kSimulate},
                                            {"--describe", kDescribe},
                                            {"--json", kSearch | kDescribe | kValidate | kSimulate},
                                            {"--nodes", kSearch | kDescribe | kSimulate},
                                            {"--gpus-per-node", kSearch | kDescribe | kSimulate},
                                            {"--micro-batch", kSearch | kDescribe | kSimulate},
                                            {"--seq-len", kSearch | kDescribe | kSimulate},
                                            {"--grad-accum", kSearch | kDescribe | kSimulate},
                                            {"--host-memory-budget", kSearch | kSimulate},
                                            {"--out", kSearch},
                                            {"--explain", kSearch},
                                            {"--timeline", kSearch | kSimulate},
                                            {"--top", kSearch},
                                            {"--update-only", kSearch | kSimulate},
                                            {"--jobs", kSearch},
                                            {"--simulate-top", kSearch},
                                            {"--remote-backbone-gbps", kSearch | kSimulate},
                                            {"--quiet", kSearch | kSimulate},
                                            {"--validate", kValidate},
                                            {"--plan", kValidate},
                                            {"--simulate", kSimulate},
                                            {"--baseline-tier", kSearch},
                                            {"--param-offload", kSearch | kSimulate},
                                        });

  return mlpo::cli::run(app, argc, argv, [&] {
    flag_modes.check(app, !validate_path.empty()   ? kValidate
                          : !simulate_path.empty() ? kSimulate
                          : describe               ? kDescribe
                                                   : kSearch);
    if (!validate_path.empty()) {
      if (plan_path.empty() || profile_path.empty())
        throw mlpo::Error("--validate needs --plan FILE and --profile FILE");
      mlpo::check_input_file(validate_path, "a run log (JSON lines from mlpo-run --log)");
      const mlpo::Plan plan = mlpo::load_plan(plan_path);
      const mlpo::ModelSpec spec = mlpo::load_model(model.empty() ? plan.model_name : model);
      const auto report =
          mlpo::tune::validate_run(validate_path, plan, mlpo::load_profile(profile_path), spec);
      if (json)
        std::printf("%s\n", mlpo::tune::to_json(report).dump(2).c_str());
      else
        std::printf("%s", mlpo::tune::format_report(report).c_str());
      return 0;
    }
    if (!simulate_path.empty()) {
      if (profile_path.empty())
        throw mlpo::Error("--simulate needs --profile FILE (write one with mlpo-profile)");
      if (!timeline_path.empty()) mlpo::check_output_file(timeline_path, "--timeline");
      mlpo::Plan plan = mlpo::load_plan(simulate_path);
      std::int64_t* fields[5] = {&plan.cluster.nodes, &plan.cluster.gpus_per_node, &plan.cluster.micro_batch,
                                 &plan.cluster.seq_len, &plan.cluster.grad_accum};
      const std::int64_t values[5] = {shape.nodes, shape.gpus_per_node, shape.micro_batch, shape.seq_len,
                                      shape.grad_accum};
      const char* flags[5] = {"--nodes", "--gpus-per-node", "--micro-batch", "--seq-len", "--grad-accum"};
      for (int i = 0; i < 5; ++i)
        if (app.get_option(flags[i])->count() > 0) *fields[i] = values[i];
      const mlpo::ModelSpec spec = mlpo::load_model(model.empty() ? plan.model_name : model);
      mlpo::sim::SimulationOptions options;
      options.update_only = update_only;
      options.remote_backbone_gbps = backbone;
      options.timeline = !timeline_path.empty();
      const std::int64_t budget =
          budget_text.empty()
              ? 0
              : static_cast<std::int64_t>(mlpo::parse_bytes(budget_text, "--host-memory-budget"));
      const auto s = mlpo::tune::simulate_plan(plan, spec, mlpo::load_profile(profile_path), options, budget,
                                               param_offload);
      for (const auto& w : s.simulated.warnings) std::fprintf(stderr, "mlpo-tune: warning: %s\n", w.c_str());
      if (!timeline_path.empty())
        mlpo::tune::write_timeline_svg(s.simulated.timeline,
                                       spec.name + ": simulated iteration of " + simulate_path + ", node 0",
                                       timeline_path);
      if (json)
        std::printf("%s\n", mlpo::tune::to_json(s).dump(2).c_str());
      else if (!quiet)
        std::printf("%s", mlpo::tune::format_simulation(s).c_str());
      if (!quiet && !json && !timeline_path.empty())
        std::printf("timeline written to %s\n", timeline_path.c_str());
      return 0;
    }
    if (model.empty()) throw mlpo::Error("--model is required (a preset name or an mlpo.model/1 file)");
    const mlpo::ModelSpec spec = mlpo::load_model(model);
    if (describe) {
      const mlpo::Accounting a = mlpo::account(spec, shape);
      if (json)
        std::printf("%s\n", mlpo::to_json(a).dump(2).c_str());
      else
        std::printf("%s", mlpo::describe(a).c_str());
      return 0;
    }
    if (profile_path.empty())
      throw mlpo::Error(
          "--profile is required to search plans (write one with mlpo-profile), or pass --describe");
    if (!out_path.empty()) mlpo::check_output_file(out_path, "--out");
    if (!timeline_path.empty()) mlpo::check_output_file(timeline_path, "--timeline");
    mlpo::tune::TuneRequest request;
    request.model = spec;
    request.shape = shape;
    request.profile = mlpo::load_profile(profile_path);
    if (!budget_text.empty())
      request.host_memory_budget =
          static_cast<std::int64_t>(mlpo::parse_bytes(budget_text, "--host-memory-budget"));
    request.top_k = top;
    request.jobs = jobs;
    request.simulate_top = std::max(simulate_top, top + 1);
    request.timeline = !timeline_path.empty();
    request.options.update_only = update_only;
    request.options.remote_backbone_gbps = backbone;
    request.baseline_tier = baseline_tier;
    request.param_offload = param_offload;
    if (!quiet && ::isatty(2))
      request.progress = [](const std::string& what) {
        std::fprintf(stderr, "mlpo-tune: %s...\n", what.c_str());
      };
    const mlpo::tune::TuneResult result = mlpo::tune::tune(request);

    for (const auto& w : result.warnings) std::fprintf(stderr, "mlpo-tune: warning: %s\n", w.c_str());
    if (!out_path.empty()) mlpo::save_plan(result.chosen.plan, out_path);
    if (!timeline_path.empty())
      mlpo::tune::write_timeline_svg(result.chosen.simulated.timeline,
                                     spec.name + ": simulated iteration, node 0", timeline_path);
    if (json) {
      std::printf("%s\n", mlpo::to_json(result.chosen.plan).dump(2).c_str());
    } else if (explain) {
      std::printf("%s", mlpo::tune::explain(result, request.profile).c_str());
    } else if (!quiet) {
      const mlpo::Prediction& p = *result.chosen.plan.prediction;
      std::printf("%s", mlpo::tune::describe_plan(result.chosen.plan).c_str());
      std::printf("predicted iteration %s (update %s)", mlpo::format_seconds(p.iteration_s).c_str(),
                  mlpo::format_seconds(p.update_s).c_str());
      if (result.chosen.plan.baseline_prediction)
        std::printf("; baseline (on %s) %s, speedup %.2fx", result.baseline->plan.tiers[0].name.c_str(),
                    mlpo::format_seconds(result.chosen.plan.baseline_prediction->iteration_s).c_str(),
                    result.chosen.plan.baseline_prediction->iteration_s / p.iteration_s);
      std::printf(
          "\nsearched %zu candidates of the grid's %.3g (%zu feasible, %zu from the finer search, %zu "
          "simulated) in %s\n",
          result.candidates, result.space, result.feasible, result.refined, result.simulated,
          mlpo::format_seconds(result.seconds).c_str());
    }
    if (!quiet && !json && !out_path.empty()) std::printf("plan written to %s\n", out_path.c_str());
    if (!quiet && !json && !timeline_path.empty())
      std::printf("timeline written to %s\n", timeline_path.c_str());
    return 0;
  });
}
