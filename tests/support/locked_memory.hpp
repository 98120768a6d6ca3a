#pragma once
// Locked (pinned) memory of this process, for tests that check a pool gives back what it locked.

#include <fstream>
#include <string>

namespace mlpo::testing {

// Locked memory of this process in KiB (VmLck in /proc/self/status), -1 where it is not reported.
inline long locked_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmLck:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace mlpo::testing
