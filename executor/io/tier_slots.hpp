#pragma once
// TierSlots: the node-wide limit k on in-flight subgroup transfers per tier, shared by every
// process on the node that uses the same tier path. A slot is an exclusive flock() on one of
// k lock files in <tier path>/.mlpo-slots/ (rw-<i>.lock, or read-<i>.lock and write-<i>.lock
// with separate pools); the kernel drops a flock when its holder dies, so a killed process
// never leaks a slot. Within a process, an atomic flag per slot keeps two threads (which
// share the lock file's open description, where flock would not exclude) off the same slot.
// Every process must use the same k and scope for a tier (the plan's values).
//
// acquire() polls the k slots with try-locks, backing off from 50 us to 250 us while all are
// taken: a freed slot is noticed within 0.25 ms, small next to a subgroup transfer (tens of
// ms); waiting costs one flock() per slot per poll. The wait is returned in the TierSlot and
// added to the tier's counters (slot_wait_s).
//
// Waiters go first. A waiting thread holds a shared flock on <pool>-waiting.lock (its own
// open file, so it counts in its own process too). A thread that finds waiters there does not
// try the slots at once: it joins them and sleeps twice the longest backoff before its first
// try. Without this, a thread that releases a slot and asks again at once (a rank's writer
// with more write-backs queued) wins every time against threads asleep in their backoff, and
// one rank can finish its update well before another (docs/benchmarks.md). The order among
// waiters is whoever polls first: fair on average, not FIFO. A killed waiter's flock goes with
// it.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/slot_scope.hpp"
#include "executor/io/tier.hpp"
#include "executor/io/internal/tier_counters.hpp"
#include "executor/io/unique_fd.hpp"

namespace mlpo::io {

// The pools follow the plan's SlotScope (core/slot_scope.hpp): combined, k slots shared by
// reads and writes; separate, k for reads and k for writes.
enum class SlotUse { read, write };

class TierSlots;

// Holds one node-wide slot until destroyed or release()d. Movable.
class TierSlot {
 public:
  TierSlot() = default;
  TierSlot(TierSlot&& other) noexcept;
  TierSlot& operator=(TierSlot&& other) noexcept;
  TierSlot(const TierSlot&) = delete;
  TierSlot& operator=(const TierSlot&) = delete;
  ~TierSlot() { release(); }

  void release();
  bool held() const { return owner_ != nullptr; }
  int index() const { return index_; }  // slot number in its pool, -1 when unlimited
  double waited_s() const { return waited_s_; }

 private:
  friend class TierSlots;
  TierSlots* owner_ = nullptr;
  int pool_ = 0;
  int index_ = -1;
  double waited_s_ = 0;
};

class TierSlots {
 public:
  // Opens (creating) the k lock files of the tier. k == 0 means no limit: acquire() returns
  // at once with a slot that holds nothing. `counters` (may be null) receives wait times.
  // Throws mlpo::Error naming the tier when the slot directory cannot be created or opened.
  TierSlots(const Tier& tier, unsigned k, SlotScope scope = SlotScope::combined,
            TierCounters* counters = nullptr);
  TierSlots(const TierSlots&) = delete;
  TierSlots& operator=(const TierSlots&) = delete;

  // Blocks until a slot of `use`'s pool is free on the whole node, then holds it.
  TierSlot acquire(SlotUse use);
  // Takes a free slot if there is one now.
  std::optional<TierSlot> try_acquire(SlotUse use);

  unsigned k() const { return k_; }
  SlotScope scope() const { return scope_; }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  friend class TierSlot;
  struct Pool {
    std::vector<UniqueFd> files;
    std::filesystem::path waiting;         // <name>-waiting.lock: shared-locked by every waiting thread
    std::vector<std::atomic<bool>> taken;  // held by a thread of this process
    std::atomic<unsigned> next{0};         // where the next scan starts (spreads threads)
  };
  int pool_of(SlotUse use) const { return scope_ == SlotScope::separate && use == SlotUse::write ? 1 : 0; }
  int try_take(Pool& pool);
  void give_back(int pool, int index);
  // Whether some thread, in any process, is waiting for a slot of `pool`.
  bool others_waiting(int pool) const;
  // Opens (creating) a pool's waiting file; throws mlpo::Error naming it when it cannot.
  UniqueFd open_waiting(const Pool& pool) const;
  // Opens `pool`'s waiting file and holds a shared flock on it: this thread waits.
  UniqueFd join_waiters(int pool) const;

  std::string who_;
  unsigned k_;
  SlotScope scope_;
  TierCounters* counters_;
  std::filesystem::path directory_;
  std::vector<std::unique_ptr<Pool>> pools_;
};

}  // namespace mlpo::io
