#include "executor/train/internal/phase_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace mlpo::train {

PhaseTrace::PhaseTrace(const std::string& path, int ranks, int rank) {
  const std::string file = ranks == 1 ? path : path.empty() ? "" : path + ".rank" + std::to_string(rank);
  if (!file.empty())
    fd_ = io::UniqueFd(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (ranks > 1) mark("pid " + std::to_string(::getpid()));
}

void PhaseTrace::mark(const std::string& event) {
  if (!fd_.valid()) return;
  const std::string line = event + "\n";
  [[maybe_unused]] ssize_t w = ::write(fd_.get(), line.data(), line.size());
}

}  // namespace mlpo::train
