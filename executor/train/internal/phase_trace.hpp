#pragma once
// PhaseTrace: a test hook (MLPO_TRACE_PHASES=FILE, test_hooks.hpp) that appends one "<event>\n"
// line per phase the training loop enters — `started <step>`, `step-begin <step>`,
// `update-begin`, `update-end`, `checkpoint-begin`, `checkpoint-end`, `finished` — so a test
// that kills the process knows the last phase it entered.
//
// Each line is one unbuffered O_APPEND write(2): nothing sits in a user-space buffer when the
// process dies. One rank writes FILE; with several, rank r writes FILE.rank<r>, whose first line
// is `pid <pid>` (so a test can kill one rank). Inactive, and free, without a path. Write
// errors are ignored: a trace never fails a run.

#include <string>

#include "executor/io/unique_fd.hpp"

namespace mlpo::train {

class PhaseTrace {
 public:
  // `path` empty: inactive. `ranks`, `rank`: the job's world size and this process's rank.
  PhaseTrace(const std::string& path, int ranks, int rank);

  void mark(const std::string& event);

 private:
  io::UniqueFd fd_;
};

}  // namespace mlpo::train
