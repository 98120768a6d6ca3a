#pragma once
// RunLog: the JSON-lines run log of mlpo-run --log (docs/formats.md, "Run log"), one object
// per step, each line flushed as the step completes.
//
// The file is opened on the first record, so a run that fails its input checks leaves an
// existing log untouched. A fresh run truncates it. A resumed run keeps it, but first drops
// every line of a step at or after the first step it logs (steps a killed run logged after
// its last checkpoint, which this run computes again) and a torn last line (a kill mid-write):
// the file is rewritten atomically (temp + fsync + rename), so each step appears once, in
// order, however often the run was killed and resumed.

#include <cstdint>
#include <fstream>
#include <string>

#include "core/json_io.hpp"

namespace mlpo::runlog {

class RunLog {
 public:
  // `path` empty: logs nothing. `resume`: keep the earlier steps (above).
  RunLog(std::string path, bool resume) : path_(std::move(path)), resume_(resume) {}
  // Appends `record` (an object with an integer "step"). Throws mlpo::Error naming --log when
  // the file cannot be written.
  void write(const Json& record);

 private:
  std::string path_;
  bool resume_;
  std::ofstream out_;
};

// The text of a run log without the lines of steps >= `first_step` and without a torn last
// line; lines that are not step records stay.
std::string run_log_before(const std::string& text, std::int64_t first_step);

}  // namespace mlpo::runlog
