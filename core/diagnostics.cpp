#include "core/diagnostics.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace mlpo {

void Diagnostics::warning(std::string input, std::string text) const {
  report({DiagnosticKind::warning, std::move(input), std::move(text)});
}

void Diagnostics::note(std::string input, std::string text) const {
  report({DiagnosticKind::note, std::move(input), std::move(text)});
}

void Diagnostics::progress(std::string input, std::string text) const {
  report({DiagnosticKind::progress, std::move(input), std::move(text)});
}

void Diagnostics::report(const Diagnostic& diagnostic) const {
  if (sink_) sink_(diagnostic);
}

Diagnostics stderr_diagnostics(std::string program) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  return Diagnostics([program = std::move(program), start, tty](const Diagnostic& d) {
    switch (d.kind) {
      case DiagnosticKind::warning:
        std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), d.text.c_str());
        return;
      case DiagnosticKind::note:
        std::fprintf(stderr, "%s: note: %s\n", program.c_str(), d.text.c_str());
        return;
      case DiagnosticKind::progress: {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, tty ? "\r\033[K[%5.1f s] %s" : "[%5.1f s] %s\n", s, d.text.c_str());
        std::fflush(stderr);
        return;
      }
    }
  });
}

void end_stderr_progress_line() {
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
}

Diagnostics collect_diagnostics(std::vector<Diagnostic>& out) {
  return Diagnostics([&out](const Diagnostic& d) { out.push_back(d); });
}

Diagnostics collect_lines(std::vector<std::string>& lines) {
  return Diagnostics([&lines](const Diagnostic& d) {
    if (d.kind == DiagnosticKind::warning) lines.push_back(d.text);
    if (d.kind == DiagnosticKind::note) lines.push_back("note: " + d.text);
  });
}

void write_stderr_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace mlpo
