#include "executor/io/tier_slots.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "temp_dir.hpp"

namespace mlpo::io {
namespace {

using testing::TempDir;

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Memory shared by the test and the processes it forks: the independent in-flight counter.
struct Shared {
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> transfers{0};
  std::atomic<int> started{0};  // start barrier, so the processes really compete
  std::atomic<std::int64_t> acquired_at_ns[8];
  std::atomic<int> cycles{0};  // the fairness test: cycles its holder has begun
  std::atomic<bool> stop{false};
};

class SharedPage {
 public:
  SharedPage() {
    void* p = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) shared_ = std::construct_at(static_cast<Shared*>(p));
  }
  ~SharedPage() {
    if (shared_ != nullptr) ::munmap(shared_, sizeof(Shared));
  }
  Shared* operator->() const { return shared_; }
  Shared* get() const { return shared_; }

 private:
  Shared* shared_ = nullptr;
};

// Runs `body` in a child process; the child exits 0 if body returns true, 1 otherwise.
template <typename Body>
pid_t fork_child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    bool ok = false;
    try {
      ok = body();
    } catch (...) {}
    ::_exit(ok ? 0 : 1);
  }
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void hammer(const Tier& tier, unsigned k, int iterations, int hold_us, int processes, Shared* shared) {
  TierSlots slots(tier, k);  // opened in this process: flocks belong to its own open files
  shared->started.fetch_add(1);
  while (shared->started.load() < processes) std::this_thread::sleep_for(std::chrono::microseconds(100));
  auto hold = [&](int i) {
    for (int n = 0; n < iterations; ++n) {
      TierSlot slot = slots.acquire(n % 2 ? SlotUse::read : SlotUse::write);
      const int now = shared->in_flight.fetch_add(1) + 1;
      int seen = shared->max_in_flight.load();
      while (now > seen && !shared->max_in_flight.compare_exchange_weak(seen, now)) {}
      std::this_thread::sleep_for(std::chrono::microseconds(hold_us + 300 * i));
      shared->in_flight.fetch_sub(1);
      shared->transfers.fetch_add(1);
    }
  };
  // Two threads per process: slots must also exclude threads of one process.
  std::thread second(hold, 1);
  hold(0);
  second.join();
}

class TierSlotsLimit : public ::testing::TestWithParam<unsigned> {};

TEST_P(TierSlotsLimit, NeverMoreThanKInFlightAcrossProcesses) {
  const unsigned k = GetParam();
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  SharedPage shared;
  ASSERT_NE(shared.get(), nullptr);
  constexpr int kProcesses = 4, kIterations = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(fork_child([&] {
      hammer(tier, k, kIterations, 500, kProcesses, shared.get());
      return true;
    }));
  }
  for (pid_t pid : children) EXPECT_EQ(wait_exit_code(pid), 0);
  EXPECT_EQ(shared->transfers.load(), kProcesses * 2 * kIterations);
  EXPECT_LE(shared->max_in_flight.load(), static_cast<int>(k));
  // The limit was actually reached, so the check above had something to catch.
  EXPECT_EQ(shared->max_in_flight.load(), static_cast<int>(k));
}

INSTANTIATE_TEST_SUITE_P(K, TierSlotsLimit, ::testing::Values(1u, 2u));

TEST(TierSlots, WithoutALimitTheSameLoadOverlaps) {
  // Control for the test above: with k = 0 (no limit) the counter does see overlap.
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  SharedPage shared;
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    children.push_back(fork_child([&] {
      hammer(tier, 0, 10, 10000, 4, shared.get());
      return true;
    }));
  }
  for (pid_t pid : children) EXPECT_EQ(wait_exit_code(pid), 0);
  EXPECT_GT(shared->max_in_flight.load(), 2);
}

TEST(TierSlots, KilledHolderReleasesItsSlotWithinOneSecond) {
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  SharedPage shared;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = fork_child([&] {
    TierSlots slots(tier, 1);
    TierSlot slot = slots.acquire(SlotUse::read);
    const char c = 'x';
    if (::write(ready[1], &c, 1) != 1) return false;
    for (;;) ::pause();  // hold the slot until killed
  });
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);

  constexpr int kWaiters = 3;
  std::vector<pid_t> waiters;
  for (int w = 0; w < kWaiters; ++w) {
    waiters.push_back(fork_child([&, w] {
      TierSlots slots(tier, 1);
      TierSlot slot = slots.acquire(SlotUse::write);
      shared->acquired_at_ns[w].store(monotonic_ns());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return true;
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int w = 0; w < kWaiters; ++w)
    EXPECT_EQ(shared->acquired_at_ns[w].load(), 0) << "slot taken while held";

  const std::int64_t killed_at = monotonic_ns();
  ASSERT_EQ(::kill(holder, SIGKILL), 0);
  EXPECT_EQ(wait_exit_code(holder), 128 + SIGKILL);
  for (pid_t pid : waiters) EXPECT_EQ(wait_exit_code(pid), 0);
  std::int64_t first = INT64_MAX, last = 0;
  for (int w = 0; w < kWaiters; ++w) {
    const std::int64_t t = shared->acquired_at_ns[w].load();
    ASSERT_GT(t, killed_at);
    first = std::min(first, t);
    last = std::max(last, t);
  }
  EXPECT_LT(first - killed_at, 1'000'000'000)
      << "first waiter continued " << (first - killed_at) / 1e6 << " ms after the kill";
  EXPECT_LT(last - killed_at, 1'000'000'000)
      << "last waiter continued " << (last - killed_at) / 1e6 << " ms after the kill";
}

TEST(TierSlots, SeparateScopeKeepsReadsAndWritesApartCombinedShares) {
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  {
    TierSlots combined(tier, 1, SlotScope::combined);
    TierSlot r = combined.acquire(SlotUse::read);
    EXPECT_FALSE(combined.try_acquire(SlotUse::write).has_value());
    EXPECT_FALSE(combined.try_acquire(SlotUse::read).has_value());
  }
  {
    TierSlots separate(tier, 1, SlotScope::separate);
    TierSlot r = separate.acquire(SlotUse::read);
    auto w = separate.try_acquire(SlotUse::write);
    EXPECT_TRUE(w.has_value());
    EXPECT_FALSE(separate.try_acquire(SlotUse::read).has_value());
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() / ".mlpo-slots" / "rw-0.lock"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / ".mlpo-slots" / "write-0.lock"));
}

TEST(TierSlots, WaitTimeIsRecordedInTheSlotAndTheTierCounters) {
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  TierCounters counters;
  TierSlots slots(tier, 1, SlotScope::combined, &counters);
  TierSlot first = slots.acquire(SlotUse::read);
  EXPECT_LT(first.waited_s(), 0.05);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    first.release();
  });
  TierSlot second = slots.acquire(SlotUse::write);
  releaser.join();
  EXPECT_GE(second.waited_s(), 0.15);
  EXPECT_LT(second.waited_s(), 1.0);
  EXPECT_GE(counters.snapshot().slot_wait_s, 0.15);
  EXPECT_EQ(counters.snapshot().slot_acquisitions, 2u);
}

TEST(TierSlots, AWaiterGetsTheSlotBeforeAHolderThatAsksAgainAtOnce) {
  // A process that releases its slot and asks again at once (a rank with write-backs queued)
  // must not keep the slot from a process already waiting. Without the waiters' turn, the
  // waiter wins only when its poll lands in the microseconds between release and re-take.
  TempDir dir("/var/tmp");
  const Tier tier{"nvme", dir.path()};
  SharedPage shared;
  ASSERT_NE(shared.get(), nullptr);
  constexpr int kMaxCycles = 200;
  const pid_t holder = fork_child([&] {
    TierSlots slots(tier, 1);
    for (int n = 0; n < kMaxCycles && !shared->stop.load(); ++n) {
      TierSlot slot = slots.acquire(SlotUse::write);
      shared->cycles.store(n + 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  });
  while (shared->cycles.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  TierSlots slots(tier, 1);
  const int asked_at = shared->cycles.load();
  TierSlot mine = slots.acquire(SlotUse::write);
  const int got_at = shared->cycles.load();
  shared->stop.store(true);
  mine.release();
  EXPECT_EQ(wait_exit_code(holder), 0);
  // Next turn, or a few later on a loaded machine; not the holder's remaining ~200 cycles.
  EXPECT_LE(got_at - asked_at, 10) << "the waiter got the slot only after " << got_at - asked_at
                                   << " of the holder's cycles";
}

TEST(TierSlots, MissingTierDirectoryIsAClearError) {
  const Tier tier{"nvme", "/var/tmp/mlpo-no-such-tier-dir"};
  try {
    TierSlots slots(tier, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tier 'nvme'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mlpo::io
