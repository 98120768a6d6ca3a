// mlpo-tune: describe a model's costs on a cluster shape; (later) simulate candidate plans
// and write the best one.
#include <cstdio>

#include "cli/cli_main.hpp"
#include "core/error.hpp"
#include "core/accounting.hpp"
#include "core/model_spec.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "mlpo-tune: plan how a model's optimizer state is placed on this machine's storage tiers.\n"
      "With --describe, prints what the model costs on the given cluster shape: parameters per\n"
      "component, bytes of weights, gradients and optimizer state per rank under ZeRO-3, training\n"
      "FLOPs per token and activation memory.",
      "mlpo-tune"};
  mlpo::cli::add_version_flag(app);
  std::string model;
  bool describe = false;
  bool json = false;
  mlpo::ClusterShape shape;
  app.add_option("--model", model, "Model preset name (e.g. llama2-70b, paper-40b, mlpo-280b, small) or mlpo.model/1 JSON file")
      ->required();
  app.add_flag("--describe", describe, "Print the model's parameter, memory and FLOP accounting and exit");
  app.add_flag("--json", json, "Print machine-readable JSON instead of text");
  app.add_option("--nodes", shape.nodes, "Number of nodes")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--gpus-per-node", shape.gpus_per_node, "GPUs (ranks) per node")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--micro-batch", shape.micro_batch, "Sequences per rank per micro-step")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--seq-len", shape.seq_len, "Sequence length (default: the model's)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--grad-accum", shape.grad_accum, "Gradient accumulation steps")->capture_default_str()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));

  return mlpo::cli::run(app, argc, argv, [&] {
    mlpo::ModelSpec spec = mlpo::load_model(model);
    if (!describe) throw mlpo::Error("nothing to do: pass --describe (plan search needs --profile, not available in this build)");
    mlpo::Accounting a = mlpo::account(spec, shape);
    if (json) std::printf("%s\n", mlpo::to_json(a).dump(2).c_str());
    else std::printf("%s", mlpo::describe(a).c_str());
    return 0;
  });
}
