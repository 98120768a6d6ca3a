#include "core/error.hpp"

#include <cstring>

namespace mlpo {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  return std::string(strerror_r(err, buf, sizeof buf));
}

void check_failed(const char* expr, const char* file, int line, const std::string& context) {
  std::fprintf(stderr, "mlpo: internal error at %s:%d: check '%s' failed: %s\n", file, line, expr,
               context.c_str());
  std::abort();
}

}  // namespace mlpo
