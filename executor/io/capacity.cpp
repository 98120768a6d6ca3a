#include "executor/io/capacity.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace mlpo::io {

std::uint64_t free_bytes(const std::filesystem::path& path, const std::string& who) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) {
    const int err = errno;
    throw Error(who + ": cannot check free space: " + errno_text(err) +
                "; create the tier directory or fix its path");
  }
  return static_cast<std::uint64_t>(fs.f_bavail) * static_cast<std::uint64_t>(fs.f_frsize);
}

void check_capacity(std::span<const CapacityNeed> needs) {
  struct FileSystem {
    std::uint64_t free = 0;
    std::uint64_t needed = 0;
    std::vector<const CapacityNeed*> tiers;
  };
  std::map<dev_t, FileSystem> by_device;
  for (const CapacityNeed& need : needs) {
    const std::string who = "tier '" + need.tier->name + "' (" + need.tier->path.string() + ")";
    struct stat st {};
    if (::stat(need.tier->path.c_str(), &st) != 0) {
      const int err = errno;
      throw Error(who + ": cannot check free space: " + errno_text(err) +
                  "; create the tier directory or fix its path");
    }
    FileSystem& fs = by_device[st.st_dev];
    fs.free = free_bytes(need.tier->path, who);
    fs.needed += need.bytes;
    fs.tiers.push_back(&need);
  }
  std::string message;
  for (const auto& [dev, fs] : by_device) {
    if (fs.needed <= fs.free) continue;
    for (const CapacityNeed* need : fs.tiers) {
      if (!message.empty()) message += "\n";
      message += "tier '" + need->tier->name + "' (" + need->tier->path.string() + "): needs " +
                 format_bytes(static_cast<double>(need->bytes)) + ", " +
                 format_bytes(static_cast<double>(fs.free)) + " free";
      if (fs.tiers.size() > 1) {
        message += " (shared with other tiers on this file system, which need " +
                   format_bytes(static_cast<double>(fs.needed)) + " together)";
      }
    }
  }
  if (!message.empty()) throw Error(message);
}

}  // namespace mlpo::io
