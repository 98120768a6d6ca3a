#pragma once
// SlotPool: a tier's concurrency slots in the SimGrid model, handed out as the executor's
// TierSlots hands them (executor/io/tier_slots.hpp): waiters go first (a slot given back while
// others wait goes to one of them, not to a thread that asks again at once), and among the
// waiters whoever polls first wins, which is no order at all. The pool draws the waiter from a
// generator of its own, seeded by the model, so a simulation is still repeatable.
//
// A first-come-first-served semaphore is not the same: ranks of one node that start together
// stay in lockstep under it (each rank's reads take all the slots together, then its writes),
// while the executor's ranks fall out of step within a few transfers and mix reads and writes
// on the tier. On a tier whose reads and writes are capped apart (the testbed's blkio limits)
// that is up to twice the rate.
//
// Actors run one at a time between simcalls, so the pool needs no lock.

#include <cstdint>
#include <random>
#include <vector>

#include <simgrid/s4u/Semaphore.hpp>

namespace mlpo::sim {

class SlotPool {
 public:
  SlotPool(unsigned slots, std::uint32_t seed) : free_(slots), random_(seed) {}

  // Returns holding a slot; waits for one to be handed over while all are taken.
  void acquire() {
    if (free_ > 0 && waiters_.empty()) {
      --free_;
      return;
    }
    const simgrid::s4u::SemaphorePtr handed = simgrid::s4u::Semaphore::create(0);
    waiters_.push_back(handed);
    handed->acquire();
  }

  // Gives the slot to a waiter drawn at random, or back to the pool when none waits.
  void release() {
    if (waiters_.empty()) {
      ++free_;
      return;
    }
    std::uniform_int_distribution<std::size_t> draw(0, waiters_.size() - 1);
    const auto it = waiters_.begin() + static_cast<std::ptrdiff_t>(draw(random_));
    const simgrid::s4u::SemaphorePtr handed = *it;
    waiters_.erase(it);
    handed->release();
  }

 private:
  unsigned free_;
  std::mt19937 random_;
  std::vector<simgrid::s4u::SemaphorePtr> waiters_;
};

}  // namespace mlpo::sim
