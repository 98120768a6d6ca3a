#include "cli/cli_main.hpp"

#include <cstdio>
#include <exception>
#include <new>

#include "core/error.hpp"
#include "core/version.hpp"

namespace mlpo::cli {

void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " " + std::string(mlpo::kVersion));
}

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string name = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", name.c_str(), e.what(), name.c_str());
    return 2;
  }
  try {
    return body();
  } catch (const mlpo::Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory (reduce the model, batch or cache size)\n", name.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
}

}  // namespace mlpo::cli
