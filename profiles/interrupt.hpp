#pragma once
// Interruption of a running profile (Ctrl-C, kill): the probes write files into the user's
// tiers, and those must go away however the run ends. InterruptGuard installs a SIGINT and
// SIGTERM handler for its lifetime that only records the signal; the probes poll
// throw_if_interrupted() between I/O requests and repetitions, which throws Interrupted, so
// the stack unwinds through the RAII owners of every file and directory. The CLI then exits
// with 128 + signal (130 for SIGINT).
//
// The recorded signal is the project's one piece of global mutable state (a handler can
// reach nothing else): a lock-free std::atomic<int> in interrupt.cpp, written only by the
// handler and read by the probes. In-flight I/O is never abandoned: a probe stops issuing
// requests, waits for those already submitted, then unwinds.

#include <csignal>
#include <stdexcept>

namespace mlpo::profiles {

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
  InterruptGuard();   // installs the handlers and clears any earlier signal
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

}  // namespace mlpo::profiles
