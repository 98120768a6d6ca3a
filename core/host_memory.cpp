#include "core/host_memory.hpp"

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

}  // namespace mlpo
