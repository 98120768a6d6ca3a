#include "core/run_log_reader.hpp"

#include <map>

#include "core/error.hpp"
#include "core/internal/json_lines.hpp"

namespace mlpo {

std::vector<StepRecord> read_step_records(const std::string& path) {
  std::map<std::int64_t, StepRecord> by_step;  // the last record of each step
  for (const JsonLine& line : read_json_lines(path)) {
    if (!line.value.contains("step")) continue;
    StepRecord record = step_record_from_json(line.value, line.where);
    by_step.insert_or_assign(record.step, std::move(record));
  }
  if (by_step.empty())
    throw Error(path + ": no step records (objects with \"step\"); is this a log of mlpo-run --log?");
  std::vector<StepRecord> steps;
  for (auto& [step, record] : by_step) steps.push_back(std::move(record));
  return steps;
}

}  // namespace mlpo
