#include "core/host_memory.hpp"

#include <sys/resource.h>

#include <fstream>

namespace mlpo {

std::optional<std::int64_t> meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    try {
      return std::stoll(line.substr(key.size() + 1)) * 1024;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> host_memory_available() { return meminfo_bytes("MemAvailable"); }

std::int64_t peak_rss_bytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux: kB
}

}  // namespace mlpo
