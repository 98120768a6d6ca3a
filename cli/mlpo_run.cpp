// mlpo-run: execute pre-training (or the update phase alone) under a plan.
#include <cstdio>

#include "cli/cli_main.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "mlpo-run: run pre-training with a plan from mlpo-tune: forward and backward on the compute\n"
      "device, then the offloaded optimizer update streaming state from every storage tier.",
      "mlpo-run"};
  mlpo::cli::add_version_flag(app);
  return mlpo::cli::run(app, argc, argv, [&] {
    throw mlpo::Error("no execution modes are built into this version yet; see --help");
    return 0;
  });
}
