#include "executor/io/tier_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <chrono>
#include <system_error>
#include <thread>

#include "core/error.hpp"
#include "executor/io/tier_layout.hpp"

namespace mlpo::io {

TierSlot::TierSlot(TierSlot&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      pool_(other.pool_),
      index_(std::exchange(other.index_, -1)),
      waited_s_(other.waited_s_) {}

TierSlot& TierSlot::operator=(TierSlot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    pool_ = other.pool_;
    index_ = std::exchange(other.index_, -1);
    waited_s_ = other.waited_s_;
  }
  return *this;
}

void TierSlot::release() {
  if (owner_ != nullptr && index_ >= 0) owner_->give_back(pool_, index_);
  owner_ = nullptr;
  index_ = -1;
}

TierSlots::TierSlots(const Tier& tier, unsigned k, SlotScope scope, TierCounters* counters)
    : who_("tier '" + tier.name + "' (" + tier.path.string() + ")"),
      k_(k),
      scope_(scope),
      counters_(counters),
      directory_(slot_directory(tier.path)) {
  if (k_ == 0) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(tier.path, ec)) {
    throw Error(who_ + ": the tier directory does not exist; create it or fix the tier path");
  }
  std::filesystem::create_directories(directory_, ec);
  if (ec) {
    throw Error(who_ + ": cannot create the slot directory " + directory_.string() + ": " + ec.message() +
                "; make the tier directory writable");
  }
  const char* names[2] = {scope_ == SlotScope::separate ? "read" : "rw", "write"};
  const int pool_count = scope_ == SlotScope::separate ? 2 : 1;
  for (int p = 0; p < pool_count; ++p) {
    auto pool = std::make_unique<Pool>();
    pool->taken = std::vector<std::atomic<bool>>(k_);
    pool->waiting = directory_ / (std::string(names[p]) + "-waiting.lock");
    open_waiting(*pool);  // made now, so others_waiting() finds it
    for (unsigned i = 0; i < k_; ++i) {
      const std::filesystem::path file =
          directory_ / (std::string(names[p]) + "-" + std::to_string(i) + ".lock");
      UniqueFd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
      if (!fd.valid()) {
        const int err = errno;
        throw Error(who_ + ": cannot open slot file " + file.string() + ": " + errno_text(err) +
                    "; make the tier directory writable");
      }
      pool->files.push_back(std::move(fd));
    }
    pools_.push_back(std::move(pool));
  }
}

int TierSlots::try_take(Pool& pool) {
  const unsigned start = pool.next.fetch_add(1, std::memory_order_relaxed);
  for (unsigned j = 0; j < k_; ++j) {
    const unsigned i = (start + j) % k_;
    if (pool.taken[i].exchange(true, std::memory_order_acquire)) continue;  // another thread here has it
    if (::flock(pool.files[i].get(), LOCK_EX | LOCK_NB) == 0) return static_cast<int>(i);
    const int err = errno;
    pool.taken[i].store(false, std::memory_order_release);
    if (err != EWOULDBLOCK && err != EINTR) {
      throw Error(who_ + ": flock on slot " + std::to_string(i) + " failed: " + errno_text(err));
    }
  }
  return -1;
}

std::optional<TierSlot> TierSlots::try_acquire(SlotUse use) {
  TierSlot slot;
  if (k_ == 0) return slot;
  const int p = pool_of(use);
  const int index = try_take(*pools_[p]);
  if (index < 0) return std::nullopt;
  slot.owner_ = this;
  slot.pool_ = p;
  slot.index_ = index;
  if (counters_ != nullptr) counters_->add_slot_wait_ns(0);
  return slot;
}

bool TierSlots::others_waiting(int pool) const {
  UniqueFd fd(::open(pools_[pool]->waiting.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return false;  // removed under us: nobody can be waiting on it
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return false;  // closing fd drops the probe's lock
  return errno == EWOULDBLOCK;
}

UniqueFd TierSlots::open_waiting(const Pool& pool) const {
  UniqueFd fd(::open(pool.waiting.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!fd.valid()) {
    const int err = errno;
    throw Error(who_ + ": cannot open " + pool.waiting.string() + ": " + errno_text(err) +
                "; make the tier directory writable");
  }
  return fd;
}

UniqueFd TierSlots::join_waiters(int pool) const {
  UniqueFd fd = open_waiting(*pools_[pool]);
  // Shared locks never conflict with each other; this waits only out another thread's probe.
  while (::flock(fd.get(), LOCK_SH) != 0) {
    const int err = errno;
    if (err != EINTR)
      throw Error(who_ + ": flock on " + pools_[pool]->waiting.string() + " failed: " + errno_text(err));
  }
  return fd;
}

TierSlot TierSlots::acquire(SlotUse use) {
  TierSlot slot;
  if (k_ == 0) return slot;
  const int p = pool_of(use);
  constexpr auto kLongestBackoff = std::chrono::microseconds(250);
  const auto start = std::chrono::steady_clock::now();
  const bool queue = others_waiting(p);
  int index = queue ? -1 : try_take(*pools_[p]);
  if (index < 0) {
    const UniqueFd waiting = join_waiters(p);
    // Behind earlier waiters: let each of them poll once before this thread does.
    if (queue) std::this_thread::sleep_for(2 * kLongestBackoff);
    auto backoff = std::chrono::microseconds(50);
    while ((index = try_take(*pools_[p])) < 0) {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, kLongestBackoff);
    }
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  slot.owner_ = this;
  slot.pool_ = p;
  slot.index_ = index;
  slot.waited_s_ = std::chrono::duration<double>(waited).count();
  if (counters_ != nullptr) {
    counters_->add_slot_wait_ns(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()));
  }
  return slot;
}

void TierSlots::give_back(int pool, int index) {
  Pool& p = *pools_[pool];
  ::flock(p.files[index].get(), LOCK_UN);
  p.taken[index].store(false, std::memory_order_release);
}

}  // namespace mlpo::io
