#pragma once
// Interruption (Ctrl-C, kill) of long work that must end cleanly: the profiler's probes write
// files into the user's tiers, which must go away however the run ends; training finishes the
// step in progress so the last checkpoint stays the one to resume from. InterruptGuard
// installs a SIGINT and SIGTERM handler for its lifetime that only records the signal; the
// work polls interrupt_signal() (or throw_if_interrupted(), which throws Interrupted so the
// stack unwinds through the RAII owners of every file) at points where stopping is safe.
// The CLI then exits with 128 + signal (130 for SIGINT).
//
// With `second_signal_kills`, the handler restores the default action after the first signal,
// so a second Ctrl-C ends the process at once (for work that may take long to reach a safe
// point; the files it writes are atomic, so that loses nothing already published).
//
// The recorded signal is the project's one piece of global mutable state (a handler can
// reach nothing else): a lock-free std::atomic<int> in interrupt.cpp, written only by the
// handler and read by the work. In-flight I/O is never abandoned: the work stops issuing
// requests, waits for those already submitted, then unwinds.

#include <csignal>
#include <stdexcept>

namespace mlpo {

// Thrown by throw_if_interrupted(); deliberately not an mlpo::Error (not a user mistake).
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

class InterruptGuard {
 public:
  // Installs the handlers and clears any earlier signal. `first_message` (static storage), when
  // given, is written to stderr by the handler on the first signal.
  explicit InterruptGuard(bool second_signal_kills = false, const char* first_message = nullptr);
  ~InterruptGuard();  // restores the previous handlers
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// 0, or the signal received while an InterruptGuard was installed.
int interrupt_signal();
// Throws Interrupted when a signal was received.
void throw_if_interrupted();

}  // namespace mlpo
