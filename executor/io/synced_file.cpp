#include "executor/io/synced_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"
#include "executor/io/crc32c.hpp"

namespace mlpo::io {

SyncedFile::SyncedFile(std::filesystem::path path, std::string hint)
    : path_(std::move(path)), hint_(std::move(hint)) {
  fd_ = io::UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd_.valid()) fail("cannot create");
}

void SyncedFile::write(const void* data, std::size_t n) {
  crc_ = io::crc32c(data, n, crc_);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_.get(), p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write failed");
    p += w;
    n -= static_cast<std::size_t>(w);
    bytes_ += static_cast<std::uint64_t>(w);
  }
}

Json SyncedFile::finish() {
  if (::fsync(fd_.get()) != 0) fail("fsync failed");
  fd_.reset();
  return Json{{"name", path_.filename().string()}, {"bytes", bytes_}, {"crc32c", crc_}};
}

void SyncedFile::fail(const std::string& what) const {
  throw Error(path_.string() + ": " + what + " (" + errno_text(errno) + "); " + hint_);
}

void fsync_directory(const std::filesystem::path& dir) {
  io::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0)
    throw Error("directory " + dir.string() + ": fsync failed (" + errno_text(errno) + ")");
}

std::filesystem::path temp_sibling(const std::filesystem::path& target) {
  std::string name = ".";  // built step by step: GCC 12 warns (-Wrestrict) on the one-line concatenation
  name += target.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  return target.parent_path() / name;
}

}  // namespace mlpo::io
