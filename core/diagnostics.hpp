#pragma once
// Diagnostics: the one channel through which library code tells the user something that is
// not its result. A diagnostic is a warning (the job goes on, but not quite as asked: O_DIRECT
// refused, a figure missing from the profile), a note (information the user may want) or
// progress (what a long job is doing now). Each names its input: the tier, file, profile or
// probe it is about. Library code never writes to stderr itself; it is handed a Diagnostics.
// The CLIs pass stderr_diagnostics(), tests and results that carry their warnings pass
// collect_diagnostics(), and a default-constructed Diagnostics discards everything.
// The only other writer is write_stderr_line(), for the last words of a process that ends
// (a failed internal check, a rank aborting the job).

#include <functional>
#include <string>
#include <vector>

namespace mlpo {

enum class DiagnosticKind { warning, note, progress };

struct Diagnostic {
  DiagnosticKind kind = DiagnosticKind::warning;
  std::string input;  // what it is about: "tier 'nvme'", "profile", "/proc/meminfo", "--comm"
  std::string text;   // the whole one-line message as printed; it names the input in its words
};

class Diagnostics {
 public:
  using Sink = std::function<void(const Diagnostic&)>;

  Diagnostics() = default;  // discards every diagnostic
  explicit Diagnostics(Sink sink) : sink_(std::move(sink)) {}

  void warning(std::string input, std::string text) const;
  void note(std::string input, std::string text) const;
  void progress(std::string input, std::string text) const;
  void report(const Diagnostic& diagnostic) const;

 private:
  Sink sink_;
};

// Writes each diagnostic to stderr: "<program>: warning: <text>", "<program>: note: <text>",
// and progress as "[ 12.3 s] <text>" (seconds since this call), which rewrites one status line
// on a TTY and is a line of its own, flushed, otherwise (a log file, a pipe).
Diagnostics stderr_diagnostics(std::string program);

// Ends the status line progress rewrites on a TTY (nothing when stderr is not one); call it
// before printing anything else to stderr after progress.
void end_stderr_progress_line();

// Appends every diagnostic to `out`, which must outlive the Diagnostics.
Diagnostics collect_diagnostics(std::vector<Diagnostic>& out);

// Appends every warning and note to `lines` as a result carries it (the simulator's
// "warnings"): a warning as its text, a note as "note: <text>"; progress is dropped.
Diagnostics collect_lines(std::vector<std::string>& lines);

// One line to stderr, flushed, for a process that is about to end.
void write_stderr_line(const std::string& line);

}  // namespace mlpo
