#pragma once
// The run log read back: mlpo-run --log's JSON lines (core/internal/json_lines), training or
// update-only, as one StepRecord per step — the one reader of the log, for `mlpo-run report`
// (executor/runlog/run_report) and `mlpo-tune --validate` (tuner/validate_run).
//
// Blank lines and objects without "step" (not step records) are skipped. A step logged twice
// keeps its last record: a run resumed from an earlier checkpoint computes the steps after it
// again, and the later record is the one that run's state continues from.

#include <string>
#include <vector>

#include "core/step_record.hpp"

namespace mlpo {

// The steps in ascending order, each once (its last record). Throws mlpo::Error naming
// "path:line" and the field for a line that is not a JSON object or a field of the wrong type
// (step_record_from_json), and the path for a missing file or a log without steps.
std::vector<StepRecord> read_step_records(const std::string& path);

}  // namespace mlpo
