#pragma once
// mlpo::Error is the one exception type for errors a user can cause (bad input files,
// unknown presets, missing paths, no space, no GPU). Its message names the field or path
// and says how to fix it; the CLIs print it on one line and exit with status 2.
// Internal invariant breaks are not Errors: they abort via MLPO_CHECK with context.

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace mlpo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Text of an errno value, e.g. "No such file or directory".
std::string errno_text(int err);

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& context);

}  // namespace mlpo

// Aborts with file:line and a message when an internal invariant does not hold.
#define MLPO_CHECK(cond, context)                                            \
  do {                                                                       \
    if (!(cond)) ::mlpo::check_failed(#cond, __FILE__, __LINE__, (context)); \
  } while (0)
