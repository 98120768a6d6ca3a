#include "core/internal/json_lines.hpp"

#include <cerrno>
#include <fstream>

#include "core/error.hpp"

namespace mlpo {

std::vector<JsonLine> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw Error(path + ": cannot open the run log (" + errno_text(errno) +
                "); pass the JSON-lines file mlpo-run --log wrote");
  std::vector<JsonLine> lines;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(where +
                  ": not a JSON object (the run log has one object per line); fix or remove the line");
    lines.push_back({where, std::move(j)});
  }
  return lines;
}

double number_field(const Json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return 0;
  if (!obj[key].is_number())
    throw Error(where + ": field '" + key + "' must be a number, got " + obj[key].dump());
  return obj[key].get<double>();
}

}  // namespace mlpo
