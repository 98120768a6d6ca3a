#pragma once
// Progress of a profile run: probes report what they are doing ("tier 'disk': write, 4
// streams, rep 2/3") through a ProgressSink. The CLI passes one that rewrites a single status
// line on a TTY and does nothing otherwise (or in --json mode); tests pass {} (no output).

#include <functional>
#include <string>

namespace mlpo::profiles {

using ProgressSink = std::function<void(const std::string&)>;

// Calls `sink` when it is set.
inline void report(const ProgressSink& sink, const std::string& what) {
  if (sink) sink(what);
}

}  // namespace mlpo::profiles

namespace mlpo::profiles {

// Rewrites one status line ("[12 s] tier 'disk': write, 4 streams ...") on stderr when it is
// a TTY; otherwise (a log file, a pipe) writes each one on a line of its own, flushed, so a
// long profile shows where it is. finish_progress_line() ends the TTY's line.
ProgressSink stderr_progress();
void finish_progress_line();

}  // namespace mlpo::profiles
