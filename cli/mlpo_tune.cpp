// mlpo-tune: describe a model's costs on a cluster shape; search the plan space for the
// fastest plan on a profiled machine (analytic prune, SimGrid ranking) and write it; or hold
// a measured run log against the prediction (--validate).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_main.hpp"
#include "cli/flag_modes.hpp"
#include "cli/flag_values.hpp"
#include "core/accounting.hpp"
#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/path_checks.hpp"
#include "core/units.hpp"
#include "tuner/deepspeed_config.hpp"
#include "tuner/explain.hpp"
#include "tuner/sensitivity.hpp"
#include "tuner/search.hpp"
#include "tuner/simulate_plan.hpp"
#include "tuner/timeline_svg.hpp"
#include "tuner/validate_run.hpp"
#include "tuner/what_if.hpp"

namespace {

constexpr const char* kDescription =
    "mlpo-tune: plan how a model's optimizer state is placed on this machine's storage tiers.\n"
    "  mlpo-tune --model M --profile P [shape] [--out plan.json] [--explain] [--timeline t.svg]\n"
    "      searches tier subsets and fractions, per-tier concurrency limits, subgroup size, host\n"
    "      cache, buffers and prefetch depth, update order, gradient policy and the I/O block size\n"
    "      and queue depth (those the profile measured: mlpo-profile --io-settings); keeps plans that\n"
    "      fit host memory, tier capacity and GPU memory; prunes with the analytic model and ranks\n"
    "      the best with a SimGrid simulation; writes the fastest with its predicted breakdown,\n"
    "      the top-K alternatives and the baseline's prediction.\n"
    "  mlpo-tune --model M --describe      prints the model's parameter, memory and FLOP accounting.\n"
    "  mlpo-tune --validate run.jsonl --plan plan.json --profile P\n"
    "      prints predicted versus measured per phase and tier, with the relative error (--json: JSON),\n"
    "      and the CPU time the hypervisor took in the run and in the profile (a warning when the\n"
    "      run lost more).\n"
    "  mlpo-tune --simulate plan.json --profile P [shape] [--json] [--timeline t.svg]\n"
    "      predicts exactly that plan (any subgroup size, cache, buffers, limits): per phase with its\n"
    "      bound resource, per tier, and whether it fits; shape flags override the plan's cluster.\n"
    "  mlpo-tune --model M --profile P [shape] --what-if EDIT [--what-if EDIT ...] [--out-profile F]\n"
    "      another machine, planned: applies the edits to the profile and shape (tier.nvme.read_gbps*2,\n"
    "      tier+=nvme2:like=nvme, host.memory=512GiB, nodes=16, comm.inter_node.gbps=25; the list is\n"
    "      under --what-if below), tunes both machines, prints each best plan and its phases.\n"
    "  mlpo-tune --model M --profile P [shape] --sensitivity [--change PCT] [--tornado t.svg]\n"
    "      what bounds this run: the chosen plan's prediction with each measured resource moved down\n"
    "      and up by PCT % (default 25), the plan kept and the machine re-tuned, ranked.\n"
    "  mlpo-tune --model M --profile P [shape] --emit deepspeed [--out ds_config.json]\n"
    "      the closest DeepSpeed ZeRO-3 offload configuration for this machine and its prediction,\n"
    "      next to MLPO's own plan.\n"
    "Numbers are checked against the ranges --help shows (INT:[1,1048576] ...), and a flag the mode does\n"
    "not read (--plan without --validate, --explain with --describe) is an error.\n"
    "See docs/simulator.md for the models and the search space.";

// What the command line sets. Which mode reads which flag: the FlagModes table below.
struct TuneFlags {
  std::string model, profile_path, out_path, timeline_path, validate_path, plan_path, budget_text,
      simulate_path, baseline_tier, out_profile, tornado_path, emit;
  std::vector<std::string> what_if, tier_paths;
  bool ranks_per_node_given = false;  // --gpus-per-node given; else: the profile's GPU count (1 without GPUs)
  bool describe = false, json = false, explain = false, update_only = false, quiet = false,
       param_offload = false, sensitivity = false;
  int top = 3, jobs = 2, simulate_top = 8;
  double backbone = 0, change_pct = 25;
  mlpo::ClusterShape shape;
};

enum Mode : unsigned {
  kSearch = 1,
  kDescribe = 2,
  kValidate = 4,
  kSimulate = 8,
  kWhatIf = 16,
  kSensitivity = 32,
  kEmit = 64
};
constexpr unsigned kPlanning = kSearch | kWhatIf | kSensitivity | kEmit;  // modes that tune

// The --what-if targets with their units, for --help.
std::string what_if_help() {
  std::string out =
      "Another machine: EDIT is TARGET=VALUE (a rate: the curve's peak), TARGET*FACTOR, "
      "tier+=NAME:like=TIER[,path=DIR] or tier-=NAME; repeatable, applied in order. Targets:";
  for (const auto& t : mlpo::tune::edit_targets())
    out += "\n  " + t.pattern + (t.unit.empty() ? "" : " [" + t.unit + "]") + ": " + t.meaning;
  return out;
}

void add_flags(CLI::App& app, TuneFlags& f) {
  app.add_option(
      "--model", f.model,
      "Model preset name (e.g. llama2-70b, paper-40b, mlpo-280b, small) or mlpo.model/1 JSON file");
  app.add_option("--profile", f.profile_path, "Machine profile (mlpo.profile/1 JSON, from mlpo-profile)");
  app.add_flag("--describe", f.describe, "Print the model's parameter, memory and FLOP accounting and exit");
  app.add_flag("--json", f.json,
               "Print machine-readable JSON instead of text (--describe, --simulate, --validate, and the "
               "search: the plan)");
  mlpo::cli::add_checked(app, "--nodes", f.shape.nodes, "Number of nodes",
                         mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--gpus-per-node", f.shape.ranks_per_node,
                 "GPUs (ranks) per node (default: the profile's GPU count; 1 on a profile without GPUs)")
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  mlpo::cli::add_checked(app, "--micro-batch", f.shape.micro_batch, "Sequences per rank per micro-step",
                         mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option("--seq-len", f.shape.seq_len, "Sequence length (default: the model's)")
      ->check(mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  mlpo::cli::add_checked(app, "--grad-accum", f.shape.grad_accum, "Gradient accumulation steps",
                         mlpo::cli::whole_in(1, std::int64_t{1} << 20));
  app.add_option(
         "--host-memory-budget", f.budget_text,
         "Host memory per node plans may use, e.g. 400GiB (default: the profile's host.available_bytes)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--out", f.out_path, "Write the chosen plan (mlpo.plan/1 JSON) here");
  app.add_flag(
      "--explain", f.explain,
      "Explain the choice: bound resource per phase, tier split vs bandwidth, what each principle saves");
  app.add_option("--timeline", f.timeline_path,
                 "Write an SVG Gantt chart of the chosen plan's simulated iteration (node 0)");
  mlpo::cli::add_checked(app, "--top", f.top, "Alternatives kept in the plan file",
                         mlpo::cli::whole_in(0, 50));
  app.add_flag(
      "--update-only", f.update_only,
      "Predict the update phase alone (what `mlpo-run --update-only` measures); skips the GPU memory check");
  mlpo::cli::add_checked(app, "--jobs", f.jobs, "SimGrid simulations run at once (child processes)",
                         mlpo::cli::whole_in(1, 256));
  mlpo::cli::add_checked(app, "--simulate-top", f.simulate_top, "Analytic survivors ranked with SimGrid",
                         mlpo::cli::whole_in(1, 1000));
  app.add_option("--remote-backbone-gbps", f.backbone,
                 "Cluster-wide bandwidth of remote tiers per direction, GB/s (default: no shared limit)")
      ->check(mlpo::cli::real_in({0, 1e6, true}));
  app.add_option("--validate", f.validate_path,
                 "Compare a run log (JSON lines from mlpo-run) with the prediction for --plan");
  app.add_option("--plan", f.plan_path, "With --validate: the plan the run used");
  app.add_option("--tier-path", f.tier_paths,
                 "With --simulate: NAME=DIR, the plan's tier NAME at DIR on this machine (repeatable)")
      ->expected(1)
      ->take_all();
  app.add_option(
      "--simulate", f.simulate_path,
      "Predict this plan (mlpo.plan/1 JSON) on --profile: per phase, per tier, bound resource, fit");
  app.add_option("--baseline-tier", f.baseline_tier,
                 "Tier the baseline (ZeRO-3 offload) streams from (default: the node-local NVMe tier, else "
                 "the fastest streamed one)");
  app.add_flag("--param-offload", f.param_offload,
               "One rank: count the weights as `mlpo-run --param-offload` holds them (host memory, streamed "
               "per layer) and, on the CPU backend, time each part's weight copy (--validate reads it from "
               "the log's weight_fetch_bytes)");
  app.add_flag("--quiet", f.quiet, "Print only errors and warnings");
  app.add_option("--what-if", f.what_if, what_if_help())->expected(1)->take_all();
  app.add_option("--out-profile", f.out_profile, "With --what-if: write the edited profile here");
  app.add_flag("--sensitivity", f.sensitivity,
               "Rank what bounds the chosen plan: each measured resource moved down and up by --change");
  app.add_option("--change", f.change_pct, "With --sensitivity: how far each resource moves, percent")
      ->check(mlpo::cli::real_in({1, 99, false}));
  app.add_option("--tornado", f.tornado_path, "With --sensitivity: write an SVG tornado chart here");
  app.add_option("--emit", f.emit,
                 "Write another stack's configuration for this machine: deepspeed (a ZeRO-3 ds_config.json "
                 "to --out, else to stdout)")
      ->check(CLI::IsMember({"deepspeed"}));
}

// Which mode reads which flag: one the chosen mode would ignore is an error naming the mode
// (cli/flag_modes.hpp). Every flag has a row.
mlpo::cli::FlagModes flag_modes() {
  return mlpo::cli::FlagModes({{kSearch, "the plan search"},
                               {kDescribe, "--describe"},
                               {kValidate, "--validate"},
                               {kSimulate, "--simulate"},
                               {kWhatIf, "--what-if"},
                               {kSensitivity, "--sensitivity"},
                               {kEmit, "--emit"}},
                              {
                                  {"--model", kPlanning | kDescribe | kValidate | kSimulate},
                                  {"--profile", kPlanning | kValidate | kSimulate},
                                  {"--describe", kDescribe},
                                  {"--json", kPlanning | kDescribe | kValidate | kSimulate},
                                  {"--nodes", kPlanning | kDescribe | kSimulate},
                                  {"--gpus-per-node", kPlanning | kDescribe | kSimulate},
                                  {"--micro-batch", kPlanning | kDescribe | kSimulate},
                                  {"--seq-len", kPlanning | kDescribe | kSimulate},
                                  {"--grad-accum", kPlanning | kDescribe | kSimulate},
                                  {"--host-memory-budget", kPlanning | kSimulate},
                                  {"--out", kSearch | kWhatIf | kEmit},
                                  {"--explain", kSearch},
                                  {"--timeline", kSearch | kSimulate},
                                  {"--top", kSearch},
                                  {"--update-only", kSearch | kSimulate | kWhatIf | kSensitivity},
                                  {"--jobs", kPlanning},
                                  {"--simulate-top", kPlanning},
                                  {"--remote-backbone-gbps", kPlanning | kValidate | kSimulate},
                                  {"--quiet", kPlanning | kSimulate},
                                  {"--validate", kValidate},
                                  {"--plan", kValidate},
                                  {"--tier-path", kSimulate},
                                  {"--simulate", kSimulate},
                                  {"--baseline-tier", kPlanning},
                                  {"--param-offload", kPlanning | kSimulate},
                                  {"--what-if", kWhatIf},
                                  {"--out-profile", kWhatIf},
                                  {"--sensitivity", kSensitivity},
                                  {"--change", kSensitivity},
                                  {"--tornado", kSensitivity},
                                  {"--emit", kEmit},
                              });
}

Mode mode_of(const TuneFlags& f) {
  return !f.validate_path.empty()   ? kValidate
         : !f.simulate_path.empty() ? kSimulate
         : !f.what_if.empty()       ? kWhatIf
         : f.sensitivity            ? kSensitivity
         : !f.emit.empty()          ? kEmit
         : f.describe               ? kDescribe
                                    : kSearch;
}

std::int64_t host_memory_budget(const TuneFlags& f) {
  return f.budget_text.empty()
             ? 0
             : static_cast<std::int64_t>(mlpo::parse_bytes(f.budget_text, "--host-memory-budget"));
}

// Warnings always; a line starting "note: " (the profile has no GPU, ...) is information,
// printed unless `quiet`.
void print_warnings(const std::vector<std::string>& warnings, bool quiet = false) {
  for (const auto& w : warnings) {
    if (w.rfind("note: ", 0) == 0) {
      if (!quiet) std::fprintf(stderr, "mlpo-tune: %s\n", w.c_str());
    } else {
      std::fprintf(stderr, "mlpo-tune: warning: %s\n", w.c_str());
    }
  }
}

// The profile at `path`. One measured on another machine (the example profiles, a colleague's)
// has its `notes` shown unless `quiet` ("EXAMPLE, NOT MEASURED: ..."): what it stands for.
mlpo::Profile load_noted_profile(const std::string& path, bool quiet) {
  mlpo::Profile profile = mlpo::load_profile(path);
  const std::string notes = mlpo::notes_from_elsewhere(profile);
  if (!quiet && !notes.empty())
    std::fprintf(stderr, "mlpo-tune: note: profile %s: %s\n", path.c_str(), notes.c_str());
  return profile;
}

// A result as --json asks (its JSON document) or as text unless --quiet, then where its chart
// (`chart`, e.g. "timeline") went when one was asked for.
template <class Result, class Format>
void print_result(const Result& r, Format format, const TuneFlags& f, const char* chart,
                  const std::string& chart_path) {
  if (f.json)
    std::printf("%s\n", mlpo::tune::to_json(r).dump(2).c_str());
  else if (!f.quiet)
    std::printf("%s", format(r).c_str());
  if (!f.quiet && !f.json && !chart_path.empty())
    std::printf("%s written to %s\n", chart, chart_path.c_str());
}

// --validate: predicted against measured, per phase and tier.
int run_validate(const TuneFlags& f) {
  if (f.plan_path.empty() || f.profile_path.empty())
    throw mlpo::Error("--validate needs --plan FILE and --profile FILE");
  mlpo::check_input_file(f.validate_path, "a run log (JSON lines from mlpo-run --log)");
  const mlpo::Plan plan = mlpo::load_plan(f.plan_path);
  const mlpo::ModelSpec spec = mlpo::load_model(f.model.empty() ? plan.model_name : f.model);
  const auto report = mlpo::tune::validate_run(f.validate_path, plan,
                                               load_noted_profile(f.profile_path, f.json), spec, f.backbone);
  if (f.json) {
    std::printf("%s\n", mlpo::tune::to_json(report).dump(2).c_str());
  } else {
    print_warnings(report.warnings);
    std::printf("%s", mlpo::tune::format_report(report).c_str());
  }
  return 0;
}

// --simulate: exactly the given plan; shape flags given on the command line override its cluster.
int run_simulate(const CLI::App& app, const TuneFlags& f) {
  if (f.profile_path.empty())
    throw mlpo::Error("--simulate needs --profile FILE (write one with mlpo-profile)");
  if (!f.timeline_path.empty()) mlpo::check_output_file(f.timeline_path, "--timeline");
  mlpo::Plan plan = mlpo::load_plan(f.simulate_path);
  mlpo::set_tier_paths(plan, f.tier_paths, "--tier-path");
  std::int64_t* fields[5] = {&plan.cluster.nodes, &plan.cluster.ranks_per_node, &plan.cluster.micro_batch,
                             &plan.cluster.seq_len, &plan.cluster.grad_accum};
  const std::int64_t values[5] = {f.shape.nodes, f.shape.ranks_per_node, f.shape.micro_batch, f.shape.seq_len,
                                  f.shape.grad_accum};
  const char* flags[5] = {"--nodes", "--gpus-per-node", "--micro-batch", "--seq-len", "--grad-accum"};
  for (int i = 0; i < 5; ++i)
    if (app.get_option(flags[i])->count() > 0) *fields[i] = values[i];
  const mlpo::ModelSpec spec = mlpo::load_model(f.model.empty() ? plan.model_name : f.model);
  mlpo::sim::SimulationOptions options;
  options.update_only = f.update_only;
  options.remote_backbone_gbps = f.backbone;
  options.timeline = !f.timeline_path.empty();
  options.param_offload = f.param_offload;
  const auto s = mlpo::tune::simulate_plan(plan, spec, load_noted_profile(f.profile_path, f.quiet || f.json),
                                           options, host_memory_budget(f), f.param_offload);
  print_warnings(s.simulated.warnings, f.quiet || f.json);
  if (!f.timeline_path.empty())
    mlpo::tune::write_timeline_svg(s.simulated.timeline,
                                   spec.name + ": simulated iteration of " + f.simulate_path + ", node 0",
                                   f.timeline_path);
  print_result(s, mlpo::tune::format_simulation, f, "timeline", f.timeline_path);
  return 0;
}

// --describe: the model's parameter, memory and FLOP accounting on the shape.
int run_describe(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  const mlpo::Accounting a = mlpo::account(spec, f.shape);
  if (f.json)
    std::printf("%s\n", mlpo::to_json(a).dump(2).c_str());
  else
    std::printf("%s", mlpo::describe(a).c_str());
  return 0;
}

// The search's request: model, shape, profile and the search settings.
mlpo::tune::TuneRequest tune_request(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  if (f.profile_path.empty())
    throw mlpo::Error(
        "--profile is required to search plans (write one with mlpo-profile), or pass --describe");
  if (!f.out_path.empty()) mlpo::check_output_file(f.out_path, "--out");
  if (!f.timeline_path.empty()) mlpo::check_output_file(f.timeline_path, "--timeline");
  mlpo::tune::TuneRequest request;
  request.model = spec;
  request.shape = f.shape;
  request.profile = load_noted_profile(f.profile_path, f.quiet || f.json);
  // A profile with GPUs plans for all of them unless --gpus-per-node says otherwise.
  if (!f.ranks_per_node_given && request.profile.gpu_count() > 0)
    request.shape.ranks_per_node = request.profile.gpu_count();
  if (!f.budget_text.empty()) request.host_memory_budget = host_memory_budget(f);
  request.top_k = f.top;
  request.jobs = f.jobs;
  request.simulate_top = std::max(f.simulate_top, f.top + 1);
  request.timeline = !f.timeline_path.empty();
  request.options.update_only = f.update_only;
  request.options.remote_backbone_gbps = f.backbone;
  request.baseline_tier = f.baseline_tier;
  request.param_offload = f.param_offload;
  if (!f.quiet && ::isatty(2))
    request.progress = [](const std::string& what) {
      std::fprintf(stderr, "mlpo-tune: %s...\n", what.c_str());
    };
  return request;
}

// The plan search: the fastest plan on the profile, written to --out.
int run_search(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  const mlpo::tune::TuneRequest request = tune_request(spec, f);
  const mlpo::tune::TuneResult result = mlpo::tune::tune(request);

  print_warnings(result.warnings, f.quiet || f.json);
  if (!f.out_path.empty()) mlpo::save_plan(result.chosen.plan, f.out_path);
  if (!f.timeline_path.empty())
    mlpo::tune::write_timeline_svg(result.chosen.simulated.timeline,
                                   spec.name + ": simulated iteration, node 0", f.timeline_path);
  if (f.json)
    std::printf("%s\n", mlpo::to_json(result.chosen.plan).dump(2).c_str());
  else if (f.explain)
    std::printf("%s", mlpo::tune::explain(result, request.profile).c_str());
  else if (!f.quiet)
    std::printf("%s", mlpo::tune::search_summary(result).c_str());
  if (!f.quiet && !f.json && !f.out_path.empty()) std::printf("plan written to %s\n", f.out_path.c_str());
  if (!f.quiet && !f.json && !f.timeline_path.empty())
    std::printf("timeline written to %s\n", f.timeline_path.c_str());
  return 0;
}

// --what-if: the machine as profiled and with the edits, each tuned.
int run_what_if(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  std::vector<mlpo::tune::ScenarioEdit> edits;
  for (const auto& text : f.what_if) edits.push_back(mlpo::tune::parse_edit(text));
  if (!f.out_profile.empty()) mlpo::check_output_file(f.out_profile, "--out-profile");
  const mlpo::tune::WhatIf w = mlpo::tune::what_if(tune_request(spec, f), edits);
  if (!f.out_profile.empty())
    mlpo::write_file_atomic(f.out_profile, mlpo::to_json(w.edited.profile).dump(2) + "\n");
  if (!f.out_path.empty() && w.after.result) mlpo::save_plan(w.after.result->chosen.plan, f.out_path);
  print_result(w, mlpo::tune::format_what_if, f, "", "");
  if (!f.quiet && !f.json) {
    if (!f.out_profile.empty()) std::printf("edited profile written to %s\n", f.out_profile.c_str());
    if (!f.out_path.empty() && w.after.result)
      std::printf("plan (with the edits) written to %s\n", f.out_path.c_str());
  }
  return 0;
}

// --sensitivity: what bounds the chosen plan.
int run_sensitivity(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  if (!f.tornado_path.empty()) mlpo::check_output_file(f.tornado_path, "--tornado");
  const auto r = mlpo::tune::sensitivity(tune_request(spec, f), f.change_pct / 100);
  if (!f.tornado_path.empty())
    mlpo::write_file_atomic(
        f.tornado_path,
        mlpo::tune::tornado_svg(r, spec.name + ": what bounds the plan (" + f.profile_path + ")"));
  print_result(r, mlpo::tune::format_sensitivity, f, "tornado chart", f.tornado_path);
  return 0;
}

// --emit deepspeed: the closest DeepSpeed configuration and MLPO's plan beside it.
int run_emit(const mlpo::ModelSpec& spec, const TuneFlags& f) {
  mlpo::tune::TuneRequest request = tune_request(spec, f);
  const mlpo::tune::DeepSpeedPlan ds = mlpo::tune::deepspeed_plan(request);
  const std::string config = ds.config.dump(2) + "\n";
  if (f.out_path.empty()) {
    std::printf("%s", config.c_str());
    return 0;
  }
  request.ablations = false;
  const mlpo::tune::TuneResult mlpo_plan = mlpo::tune::tune(request);
  mlpo::write_file_atomic(f.out_path, config);
  if (f.json)
    std::printf("%s\n", mlpo::Json{{"deepspeed_config", ds.config},
                                   {"deepspeed_prediction", mlpo::to_json(ds.simulated.prediction)},
                                   {"mlpo_plan", mlpo::to_json(mlpo_plan.chosen.plan)}}
                            .dump(2)
                            .c_str());
  else if (!f.quiet)
    std::printf("%sDeepSpeed configuration written to %s\n",
                mlpo::tune::format_deepspeed(ds, &mlpo_plan).c_str(), f.out_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "mlpo-tune"};
  mlpo::cli::add_version_flag(app);
  TuneFlags flags;
  add_flags(app, flags);
  const mlpo::cli::FlagModes modes = flag_modes();
  return mlpo::cli::run(app, argc, argv, [&] {
    flags.ranks_per_node_given = app.get_option("--gpus-per-node")->count() > 0;
    const Mode mode = mode_of(flags);
    modes.check(app, mode);
    if (mode == kValidate) return run_validate(flags);
    if (mode == kSimulate) return run_simulate(app, flags);
    if (flags.model.empty()) throw mlpo::Error("--model is required (a preset name or an mlpo.model/1 file)");
    const mlpo::ModelSpec spec = mlpo::load_model(flags.model);
    if (mode == kWhatIf) return run_what_if(spec, flags);
    if (mode == kSensitivity) return run_sensitivity(spec, flags);
    if (mode == kEmit) return run_emit(spec, flags);
    return mode == kDescribe ? run_describe(spec, flags) : run_search(spec, flags);
  });
}
