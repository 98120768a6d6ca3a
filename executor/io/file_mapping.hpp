#pragma once
// FileMapping: a whole file mapped read-only into the process (mmap, PROT_READ, MAP_SHARED).
// Nothing is read at construction: pages come in from the page cache or the disk when they
// are first touched, and the kernel may drop them again under memory pressure, so a mapping
// of a file far larger than memory costs only the pages in use. Used for token files (the
// training loader draws a few sequences per step from files of any size) and for the text
// that prepare-data tokenizes. Owns the mapping; unmaps on destruction. Movable.

#include <cstddef>
#include <string>
#include <string_view>

namespace mlpo::io {

class FileMapping {
 public:
  enum class Access { random, sequential };  // madvise hint: sampled sequences, or one pass

  // Maps `path`. Throws mlpo::Error "<flag> <path>: ..." when it cannot be opened or mapped.
  // An empty file maps to an empty view.
  FileMapping(const std::string& path, const std::string& flag, Access access);
  ~FileMapping();
  FileMapping(FileMapping&& other) noexcept;
  FileMapping& operator=(FileMapping&& other) noexcept;
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mlpo::io
