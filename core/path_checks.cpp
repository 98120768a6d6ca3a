#include "core/path_checks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/error.hpp"

namespace mlpo {

namespace {

// What a non-regular file is, for messages.
const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

void check_input_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(path + ": cannot open (" + errno_text(errno) + "); expected " + what);
  if (!S_ISREG(st.st_mode))
    throw Error(path + ": is " + file_type_name(st.st_mode) + ", not a regular file; expected " + what);
}

void check_output_file(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  const std::string where = flag + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode))
      throw Error(where + ": is a directory; give the path of a file (inside it, or elsewhere)");
    throw Error(where + ": is " + std::string(file_type_name(st.st_mode)) +
                "; give the path of a regular file");
  }
  const fs::path dir = fs::absolute(path).parent_path();
  if (!fs::is_directory(dir))
    throw Error(where + ": directory " + dir.string() + " does not exist; create it or pick another path");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(where + ": directory " + dir.string() + " is not writable; pick another path");
}

}  // namespace mlpo
