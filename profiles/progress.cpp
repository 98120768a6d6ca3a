#include "profiles/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace mlpo::profiles {

ProgressSink stderr_progress() {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  return [start, tty](const std::string& what) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, tty ? "\r\033[K[%5.1f s] %s" : "[%5.1f s] %s\n", s, what.c_str());
    std::fflush(stderr);
  };
}

void finish_progress_line() {
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
}

}  // namespace mlpo::profiles
