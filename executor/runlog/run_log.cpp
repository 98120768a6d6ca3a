#include "executor/runlog/run_log.hpp"

#include <filesystem>
#include <sstream>

#include "core/error.hpp"

namespace mlpo::runlog {

std::string run_log_before(const std::string& text, std::int64_t first_step) {
  std::string kept;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t nl = text.find('\n', begin);
    if (nl == std::string::npos) break;  // torn: the process died while writing it
    const std::string line = text.substr(begin, nl - begin);
    begin = nl + 1;
    const Json rec = Json::parse(line, nullptr, false);
    const bool later = rec.is_object() && rec.contains("step") && rec["step"].is_number_integer() &&
                       rec["step"].get<std::int64_t>() >= first_step;
    if (!later) kept += line + "\n";
  }
  return kept;
}

void RunLog::write(const Json& record) {
  if (path_.empty()) return;
  if (!out_.is_open()) {
    std::error_code ec;
    if (resume_ && std::filesystem::exists(path_, ec)) {
      std::ifstream in(path_, std::ios::binary);
      if (!in) throw Error("--log " + path_ + ": cannot read the earlier steps; check its permissions");
      std::stringstream text;
      text << in.rdbuf();
      const std::string kept = run_log_before(text.str(), record["step"].get<std::int64_t>());
      if (kept != text.str()) write_file_atomic(path_, kept);
    }
    out_.open(path_, resume_ ? std::ios::app : std::ios::trunc);
    if (!out_)
      throw Error("--log " + path_ + ": cannot open for writing; check the directory exists and is writable");
  }
  out_ << record.dump() << "\n" << std::flush;
  if (!out_) throw Error("--log " + path_ + ": write failed; check the file system's free space");
}

}  // namespace mlpo::runlog
