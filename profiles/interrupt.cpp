#include "profiles/interrupt.hpp"

#include <atomic>
#include <string>

namespace mlpo::profiles {

namespace {

// The one global (see the header): set by the handler, polled by the probes.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be async-signal-safe");

extern "C" void record_signal(int signal) { g_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by signal " + std::to_string(signal) + "; probe files removed"),
      signal_(signal) {}

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

int interrupt_signal() { return g_signal.load(std::memory_order_relaxed); }

void throw_if_interrupted() {
  if (const int s = interrupt_signal(); s != 0) throw Interrupted(s);
}

}  // namespace mlpo::profiles
