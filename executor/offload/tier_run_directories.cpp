#include "executor/offload/tier_run_directories.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "executor/io/tier_layout.hpp"

namespace mlpo::offload {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name) != 0) return "unknown-host";
  name[HOST_NAME_MAX] = '\0';
  return name;
}

// The pid of a run directory of this host that may be judged by its pid; 0 for anything else
// (another host's run, a name we did not make).
long own_host_pid(const std::string& name, const std::string& host) {
  std::string rest;
  for (const char* kind : {"train-", "update-"})
    if (name.rfind(kind, 0) == 0) rest = name.substr(std::char_traits<char>::length(kind));
  if (rest.empty()) return 0;
  const auto dash = rest.rfind('-');
  const std::string pid_text = dash == std::string::npos ? rest : rest.substr(dash + 1);
  if (dash != std::string::npos && rest.substr(0, dash) != host) return 0;
  if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::strtol(pid_text.c_str(), nullptr, 10);
}

}  // namespace

std::string default_run_name(const std::string& kind) {
  return kind + "-" + host_name() + "-" + std::to_string(::getpid());
}

TierRunDirectories::TierRunDirectories(const Plan& plan, const std::string& run) {
  const std::string host = host_name();
  for (const auto& t : plan.tiers) {
    if (t.kind == TierKind::memory) continue;
    const fs::path base = io::runs_directory(t.path);
    dirs_.push_back(io::run_directory(t.path, run));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec)) {
      const long pid = own_host_pid(e.path().filename().string(), host);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
    }
  }
}

TierRunDirectories::~TierRunDirectories() {
  for (const auto& d : dirs_) {
    std::error_code ec;
    fs::remove_all(d, ec);
    fs::remove(d.parent_path(), ec);  // <tier>/mlpo, only if now empty
  }
}

}  // namespace mlpo::offload
