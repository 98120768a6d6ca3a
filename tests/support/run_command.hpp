#pragma once
// Runs a shell command line for the CLI tests: its exit status (128 + signal when a signal
// ended it) and its stdout and stderr together.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace mlpo::testing {

struct CommandResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

}  // namespace mlpo::testing
