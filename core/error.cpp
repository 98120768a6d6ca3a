#include "core/error.hpp"

#include <cstring>

#include "core/diagnostics.hpp"

namespace mlpo {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  return std::string(strerror_r(err, buf, sizeof buf));
}

void check_failed(const char* expr, const char* file, int line, const std::string& context) {
  write_stderr_line("mlpo: internal error at " + std::string(file) + ":" + std::to_string(line) +
                    ": check '" + expr + "' failed: " + context);
  std::abort();
}

}  // namespace mlpo
