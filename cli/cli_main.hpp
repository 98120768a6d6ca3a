#pragma once
// The shared shell of every MLPO command: parse with CLI11, run the body, and map every
// failure to one line on stderr and an exit status — 0 success, 2 bad usage or invalid
// input (mlpo::Error), 1 an unexpected internal failure. Nothing escapes uncaught.

#include <functional>

#include <CLI/CLI.hpp>

namespace mlpo::cli {

// Adds --version to `app` (prints "<name> <version>").
void add_version_flag(CLI::App& app);

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace mlpo::cli
