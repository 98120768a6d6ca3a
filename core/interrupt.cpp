#include "core/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace mlpo {

namespace {

// The one global (see the header): set by the handler, polled by the work.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be async-signal-safe");
// Read by the handler; written only while no handler of ours is installed.
bool g_second_kills = false;
const char* g_first_message = nullptr;

extern "C" void record_signal(int signal) {
  const int previous = g_signal.exchange(signal, std::memory_order_relaxed);
  if (!g_second_kills || previous != 0) return;
  if (g_first_message != nullptr) {
    const ssize_t ignored = ::write(STDERR_FILENO, g_first_message, std::strlen(g_first_message));
    (void)ignored;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(SIGINT, &fallback, nullptr);
  sigaction(SIGTERM, &fallback, nullptr);
}

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by signal " + std::to_string(signal)), signal_(signal) {}

InterruptGuard::InterruptGuard(bool second_signal_kills, const char* first_message) {
  g_signal.store(0);
  g_second_kills = second_signal_kills;
  g_first_message = first_message;
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

}  // namespace mlpo
