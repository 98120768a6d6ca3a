// mlpo-profile: measure this machine into an mlpo.profile/1 file.
#include <cstdio>

#include "cli/cli_main.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "mlpo-profile: measure this machine (host memory and CPU Adam throughput, GPUs and PCIe,\n"
      "and the bandwidth of every storage tier at several concurrencies) into a profile that\n"
      "mlpo-tune reads.",
      "mlpo-profile"};
  mlpo::cli::add_version_flag(app);
  return mlpo::cli::run(app, argc, argv, [&] {
    throw mlpo::Error("no probes are built into this version yet; see --help");
    return 0;
  });
}
