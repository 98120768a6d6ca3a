#include "cli/cli_main.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>
#include <exception>
#include <new>

#include "core/did_you_mean.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace mlpo::cli {

void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " " + std::string(mlpo::kVersion));
}

namespace {

// Every flag name `app` and its subcommands know, with their dashes ("--model", "-h").
void collect_flags(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& n : option->get_lnames()) names.push_back("--" + n);
    for (const auto& n : option->get_snames()) names.push_back("-" + n);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    collect_flags(*sub, names);
}

// The first command-line word that looks like a flag but is none of the command's, with the
// closest known flag: "unknown flag '--modle' (did you mean '--model'?)"; "" when every
// flag-like word is known (the parse error is then about something else).
std::string unknown_flag_message(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> known;
  collect_flags(app, known);
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    // Flag-like: "--name" or "-x"; "-inf", "-1e3" and other dashed values are left to CLI11.
    const bool flag_like =
        (word.size() > 2 && word.rfind("--", 0) == 0) ||
        (word.size() == 2 && word[0] == '-' && std::isalpha(static_cast<unsigned char>(word[1])));
    if (!flag_like) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    return "unknown flag '" + name + "'" + did_you_mean(name, known);
  }
  return {};
}

}  // namespace

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
    // A mistyped flag is named first, with its likely intent, whatever CLI11 tripped over.
    // CLI11's own messages start with a capital; every MLPO message after "error:" does not.
    std::string message = unknown_flag_message(app, argc, argv);
    if (message.empty()) message = e.what();
    if (!message.empty())
      message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", name.c_str(), message.c_str(), name.c_str());
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
