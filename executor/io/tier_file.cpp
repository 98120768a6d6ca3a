#include "executor/io/tier_file.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/error.hpp"

namespace mlpo::io {
namespace {

std::string tier_who(const Tier& tier) { return "tier '" + tier.name + "' (" + tier.path.string() + ")"; }

// Throws when the tier's own directory is missing or not a directory: we never create it,
// a typo in a plan must not silently fill the root file system.
void check_tier_dir(const Tier& tier) {
  struct stat st {};
  if (::stat(tier.path.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(tier_who(tier) + ": cannot use the tier directory: " + errno_text(err) +
                "; create it or fix the tier path");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(tier_who(tier) + ": the tier path is not a directory; point the tier at a directory");
  }
}

}  // namespace

TierFile::TierFile(Key, int fd, bool direct, std::filesystem::path path, std::string tier_name)
    : fd_(fd), direct_(direct), path_(std::move(path)), tier_name_(std::move(tier_name)) {}

TierFile::~TierFile() = default;

std::string TierFile::who() const { return "tier '" + tier_name_ + "' (" + path_.string() + ")"; }

std::unique_ptr<TierFile> TierFile::open(const Tier& tier, const std::filesystem::path& relative,
                                         std::uint64_t preallocate, const Diagnostics& diagnostics) {
  check_tier_dir(tier);
  const std::filesystem::path path = tier.path / relative;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    throw Error(tier_who(tier) + ": cannot create directory " + path.parent_path().string() + ": " +
                ec.message() + "; make the tier directory writable");
  }

  const int base_flags = O_RDWR | O_CREAT | O_CLOEXEC;
  bool direct = tier.direct_io;
  int fd = ::open(path.c_str(), base_flags | (direct ? O_DIRECT : 0), 0644);
  std::string refusal;
  if (fd < 0 && direct && errno == EINVAL) {
    refusal = "the file system refuses O_DIRECT (" + errno_text(EINVAL) + ")";
    direct = false;
    fd = ::open(path.c_str(), base_flags, 0644);
  }
  if (fd < 0) {
    const int err = errno;
    throw Error(tier_who(tier) + ": cannot open " + path.string() + ": " + errno_text(err) +
                "; make the tier directory writable or pick another path");
  }
  auto file = std::make_unique<TierFile>(Key{}, fd, direct, path, tier.name);

  if (direct) {
    // Since Linux 6.6 tmpfs accepts O_DIRECT but serves it through the page cache anyway;
    // drop the flag so alignment rules and the reported mode match what really happens.
    struct statfs fs {};
    if (::fstatfs(fd, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)) {
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) == 0) {
        refusal = "tmpfs is memory, O_DIRECT has no page cache to bypass there";
        file->direct_ = false;
      }
    }
  }
  if (!refusal.empty())
    diagnostics.warning("tier '" + tier.name + "'",
                        tier_who(tier) + ": " + refusal + "; using buffered I/O for this tier");
  if (preallocate > 0) file->preallocate(preallocate, diagnostics);
  return file;
}

std::uint64_t TierFile::size() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    const int err = errno;
    throw Error(who() + ": fstat failed: " + errno_text(err));
  }
  return static_cast<std::uint64_t>(st.st_size);
}

void TierFile::preallocate(std::uint64_t bytes, const Diagnostics& diagnostics) {
  if (bytes == 0) return;
  int rc;
  do {
    rc = ::fallocate(fd_.get(), 0, 0, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return;
  const int err = errno;
  if (err == EOPNOTSUPP) {
    diagnostics.warning(
        "tier '" + tier_name_ + "'",
        who() +
            ": the file system has no fallocate; the file is extended sparsely, so a full disk shows up only "
            "when written");
    if (size() < bytes && ::ftruncate(fd_.get(), static_cast<off_t>(bytes)) != 0) {
      const int err2 = errno;
      throw Error(who() + ": cannot extend to " + std::to_string(bytes) + " bytes: " + errno_text(err2));
    }
    return;
  }
  throw Error(who() + ": cannot preallocate " + format_bytes(static_cast<double>(bytes)) + ": " +
              errno_text(err) + (err == ENOSPC ? "; free space on the tier or give it a smaller share" : ""));
}

void TierFile::record_crc(std::uint64_t offset, ExtentCrc crc) {
  std::lock_guard lock(crc_mutex_);
  crcs_[offset] = crc;
}

void TierFile::forget_crc(std::uint64_t offset) {
  std::lock_guard lock(crc_mutex_);
  crcs_.erase(offset);
}

std::optional<ExtentCrc> TierFile::recorded_crc(std::uint64_t offset) const {
  std::lock_guard lock(crc_mutex_);
  auto it = crcs_.find(offset);
  if (it == crcs_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mlpo::io
