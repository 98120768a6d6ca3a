#include "executor/io/internal/io_request.hpp"

#include "core/error.hpp"

namespace mlpo::io {

void IoRequest::wait() const {
  if (!state_) return;
  while (state_->done.load(std::memory_order_acquire) == 0) state_->done.wait(0, std::memory_order_acquire);
  if (!state_->error.empty()) throw Error(state_->error);
}

bool IoRequest::done() const { return !state_ || state_->done.load(std::memory_order_acquire) != 0; }

std::string IoRequest::error() const { return done() && state_ ? state_->error : std::string(); }

void RequestGroup::wait() {
  std::string first;
  for (const IoRequest& r : requests_) {
    try {
      r.wait();
    } catch (const Error& e) {
      if (first.empty()) first = e.what();
    }
  }
  requests_.clear();
  if (!first.empty()) throw Error(first);
}

}  // namespace mlpo::io
