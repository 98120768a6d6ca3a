#pragma once
// JSON lines: one JSON object per line, as mlpo-run's run log (docs/formats.md, "Run log").
// The lines under core/run_log_reader, the one reader of the log; errors name "path:line".

#include <string>
#include <vector>

#include "core/json_io.hpp"

namespace mlpo {

struct JsonLine {
  std::string where;  // "path:line", for messages
  Json value;         // always an object
};

// The objects of `path` in file order; blank lines are skipped. Throws mlpo::Error naming
// the path when it cannot be opened, and "path:line" for a line that is not a JSON object.
std::vector<JsonLine> read_json_lines(const std::string& path);

// obj[key] as a number; 0 when absent (or null). Throws mlpo::Error naming `where` and the
// field when it holds anything else.
double number_field(const Json& obj, const char* key, const std::string& where);

}  // namespace mlpo
