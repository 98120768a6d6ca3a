#pragma once
// Runs work in forked child processes and brings back its JSON result over a pipe. SimGrid
// 3.32 keeps process-wide state (clock, models, configuration) that a second Engine would
// inherit, so every simulation gets a fresh process (a fork costs tens of milliseconds).

#include <functional>
#include <vector>

#include "core/json_io.hpp"

namespace mlpo::sim {

// Runs each job in its own child, at most `parallel` at a time; returns their results in
// order. A job's mlpo::Error is rethrown here as mlpo::Error with the same message; a child
// that crashes is a std::runtime_error naming the signal.
std::vector<Json> run_in_children(const std::vector<std::function<Json()>>& jobs, int parallel);

}  // namespace mlpo::sim
