#include "executor/io/file_mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

#include "core/error.hpp"
#include "executor/io/unique_fd.hpp"

namespace mlpo::io {

FileMapping::FileMapping(const std::string& path, const std::string& flag, Access access) {
  const io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid())
    throw Error(flag + " " + path + ": cannot open (" + errno_text(errno) + "); check the path");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw Error(flag + " " + path + ": cannot stat (" + errno_text(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw Error(flag + " " + path + ": not a regular file");
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) throw Error(flag + " " + path + ": cannot map (" + errno_text(errno) + ")");
  ::madvise(p, size_,
            access == Access::random ? MADV_RANDOM : MADV_SEQUENTIAL);  // a hint: failure is harmless
  data_ = static_cast<std::byte*>(p);
}

FileMapping::~FileMapping() {
  if (data_) ::munmap(data_, size_);
}

FileMapping::FileMapping(FileMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

FileMapping& FileMapping::operator=(FileMapping&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace mlpo::io
