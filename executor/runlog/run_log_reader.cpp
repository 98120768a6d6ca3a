#include "executor/runlog/run_log_reader.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/json_lines.hpp"

namespace mlpo::runlog {

namespace {

std::optional<double> optional_number(const Json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
  if (!obj[key].is_number())
    throw Error(where + ": field '" + key + "' must be a number, got " + obj[key].dump());
  return obj[key].get<double>();
}

RunLogStep parse_step(const Json& j, const std::string& where) {
  RunLogStep s;
  if (!j["step"].is_number_integer() || j["step"].get<std::int64_t>() < 0)
    throw Error(where + ": field 'step' must be a non-negative integer, got " + j["step"].dump());
  s.step = j["step"].get<std::int64_t>();
  s.loss = optional_number(j, "loss", where);
  s.eval_loss = optional_number(j, "eval_loss", where);
  s.tokens_per_s = optional_number(j, "tokens_per_s", where);
  s.step_s = number_field(j, "step_s", where);
  s.forward_s = number_field(j, "forward_s", where);
  s.backward_s = number_field(j, "backward_s", where);
  s.update_s = number_field(j, "update_s", where);
  s.weights_to_device_s = number_field(j, "weights_to_device_s", where);
  s.checkpoint_s = number_field(j, "checkpoint_s", where);
  if (!j.contains("tiers")) return s;
  if (!j["tiers"].is_array()) throw Error(where + ": field 'tiers' must be an array");
  for (const Json& t : j["tiers"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      throw Error(where + ": every entry of 'tiers' needs a string 'name'");
    s.tiers.push_back({t["name"].get<std::string>(), number_field(t, "read_bytes", where),
                       number_field(t, "write_bytes", where), number_field(t, "busy_s", where)});
  }
  return s;
}

}  // namespace

std::vector<RunLogStep> read_run_log_steps(const std::string& path) {
  std::map<std::int64_t, RunLogStep> by_step;  // the last record of each step
  for (const JsonLine& line : read_json_lines(path)) {
    if (!line.value.contains("step")) continue;
    RunLogStep s = parse_step(line.value, line.where);
    by_step[s.step] = std::move(s);
  }
  if (by_step.empty())
    throw Error(path + ": no step records (objects with \"step\"); is this a log of mlpo-run --log?");
  std::vector<RunLogStep> steps;
  for (auto& [step, s] : by_step) steps.push_back(std::move(s));
  return steps;
}

}  // namespace mlpo::runlog
