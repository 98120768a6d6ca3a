#include "executor/train/run_log_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>

#include "core/error.hpp"
#include "core/json_io.hpp"

namespace mlpo::train {

namespace {

std::optional<double> optional_number(const Json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
  if (!obj[key].is_number()) throw Error(where + ": field '" + key + "' must be a number, got " + obj[key].dump());
  return obj[key].get<double>();
}

double number(const Json& obj, const char* key, const std::string& where) {
  return optional_number(obj, key, where).value_or(0.0);
}

RunLogStep parse_step(const Json& j, const std::string& where) {
  RunLogStep s;
  if (!j["step"].is_number_integer() || j["step"].get<std::int64_t>() < 0)
    throw Error(where + ": field 'step' must be a non-negative integer, got " + j["step"].dump());
  s.step = j["step"].get<std::int64_t>();
  s.loss = optional_number(j, "loss", where);
  s.eval_loss = optional_number(j, "eval_loss", where);
  s.tokens_per_s = optional_number(j, "tokens_per_s", where);
  s.step_s = number(j, "step_s", where);
  s.forward_s = number(j, "forward_s", where);
  s.backward_s = number(j, "backward_s", where);
  s.update_s = number(j, "update_s", where);
  s.weights_to_device_s = number(j, "weights_to_device_s", where);
  s.checkpoint_s = number(j, "checkpoint_s", where);
  if (!j.contains("tiers")) return s;
  if (!j["tiers"].is_array()) throw Error(where + ": field 'tiers' must be an array");
  for (const Json& t : j["tiers"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      throw Error(where + ": every entry of 'tiers' needs a string 'name'");
    s.tiers.push_back({t["name"].get<std::string>(), number(t, "read_bytes", where), number(t, "write_bytes", where),
                       number(t, "busy_s", where)});
  }
  return s;
}

}  // namespace

std::vector<RunLogStep> read_run_log_steps(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the run log (" + errno_text(errno) + "); pass the JSON-lines file mlpo-run --log wrote");
  std::map<std::int64_t, RunLogStep> by_step;  // the last record of each step
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(where + ": not a JSON object (the run log has one object per line); fix or remove the line");
    if (!j.contains("step")) continue;
    RunLogStep s = parse_step(j, where);
    by_step[s.step] = std::move(s);
  }
  if (by_step.empty()) throw Error(path + ": no step records (objects with \"step\"); is this a log of mlpo-run --log?");
  std::vector<RunLogStep> steps;
  for (auto& [step, s] : by_step) steps.push_back(std::move(s));
  return steps;
}

}  // namespace mlpo::train
