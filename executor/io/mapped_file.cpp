#include "executor/io/mapped_file.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::io {

namespace {

// The last line of defence against a mapped tier file truncated by another process while
// this one is inside it (the store checks the size before each subgroup, but not within
// AdamW's pass over one): touching a page past the end raises SIGBUS. The handler looks the
// faulting address up among the live mappings and, for one of ours, ends the process with
// exit status 2 and a message naming the file, as any other error does. This table is
// process-wide state because a signal handler can reach nothing else; it is written under a
// mutex by MappedFile and read lock-free (atomics, async-signal-safe) by the handler.
struct LiveMapping {
  std::atomic<std::uintptr_t> begin{0};  // 0: the entry is free
  std::atomic<std::uintptr_t> end{0};
  char who[480] = {};
};
constexpr int kLiveMappings = 64;
LiveMapping live_mappings[kLiveMappings];
std::mutex live_mappings_mutex;
struct sigaction previous_sigbus {};

void write_all(const char* text) {
  std::size_t n = std::strlen(text);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_sigbus(int, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const auto& m : live_mappings) {
    const std::uintptr_t b = m.begin.load(std::memory_order_acquire);
    if (b == 0 || addr < b || addr >= m.end.load(std::memory_order_acquire)) continue;
    write_all("mlpo: error: ");
    write_all(m.who);
    write_all(
        ": the mapped state file was truncated while in use (SIGBUS on a page past its end); the state in it "
        "is lost, restore it from a checkpoint (and keep other programs away from the tier directory)\n");
    ::_exit(2);
  }
  ::sigaction(SIGBUS, &previous_sigbus, nullptr);  // not ours: the fault repeats under the old disposition
}

int register_mapping(const void* data, std::uint64_t bytes, const std::string& who) {
  std::lock_guard lock(live_mappings_mutex);
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return ::sigaction(SIGBUS, &sa, &previous_sigbus) == 0;
  }();
  if (!installed) return -1;
  for (int i = 0; i < kLiveMappings; ++i) {
    LiveMapping& m = live_mappings[i];
    if (m.begin.load() != 0) continue;
    std::snprintf(m.who, sizeof m.who, "%s", who.c_str());
    m.end.store(reinterpret_cast<std::uintptr_t>(data) + bytes, std::memory_order_release);
    m.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
    return i;
  }
  return -1;  // more than 64 live mappings: the store's size checks still apply
}

void unregister_mapping(int index) {
  if (index < 0) return;
  std::lock_guard lock(live_mappings_mutex);
  live_mappings[index].begin.store(0, std::memory_order_release);
}

}  // namespace

MappedFile::MappedFile(const TierFile& file, std::uint64_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::string who = "tier '" + file.tier_name() + "' (" + file.path().string() + ")";
  if (file.size() < bytes)
    throw Error(who + ": the file holds " + std::to_string(file.size()) + " bytes, " + std::to_string(bytes) +
                " are to be mapped; was it truncated? remove the run directory and start again");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, file.fd(), 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    throw Error(who + ": cannot map " + format_bytes(static_cast<double>(bytes)) +
                " of the state file: " + errno_text(err) +
                (err == ENOMEM ? "; give the tier a smaller share or free host memory" : ""));
  }
  // Huge pages where the file system offers them (tmpfs with huge=within_size/always):
  // fewer TLB misses while AdamW streams through the state. Advice only; failure is fine.
  ::madvise(p, bytes, MADV_HUGEPAGE);
  data_ = static_cast<std::byte*>(p);
  sigbus_entry_ = register_mapping(data_, bytes_, who);
}

MappedFile::~MappedFile() {
  unregister_mapping(sigbus_entry_);
  if (data_ != nullptr) ::munmap(data_, bytes_);
}

}  // namespace mlpo::io
