#pragma once
// The run log read back: mlpo-run --log's JSON lines (fields in docs/formats.md, "Run log"),
// training or update-only, as one RunLogStep per step. Only what the run report draws is
// kept; unknown fields are ignored, and the optional ones (loss, eval_loss, tokens_per_s:
// absent from update-only logs; eval_loss only on steps that evaluated) stay empty.
//
// Blank lines and objects without "step" are skipped. A step logged twice — a run resumed
// from an earlier checkpoint appends the steps after it again — keeps its last record.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlpo::runlog {

struct RunLogTier {
  std::string name;
  double read_bytes = 0;
  double write_bytes = 0;
  double busy_s = 0;
};

struct RunLogStep {
  std::int64_t step = 0;
  std::optional<double> loss, eval_loss, tokens_per_s;
  double step_s = 0, forward_s = 0, backward_s = 0, update_s = 0, weights_to_device_s = 0, checkpoint_s = 0;
  std::vector<RunLogTier> tiers;
};

// Steps in ascending order. Throws mlpo::Error naming "path:line" and the field for a line
// that is not a JSON object or a field of the wrong type, and the path for a missing file or
// a log without steps.
std::vector<RunLogStep> read_run_log_steps(const std::string& path);

}  // namespace mlpo::runlog
