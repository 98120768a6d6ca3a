#pragma once
// The test hooks of a training run, read from the process's environment: tests that start
// mlpo-run as a child process (tests/executor/train/crash_safety_test.cpp, zero_mpi_test.cpp) set them
// to widen a checkpoint's window or to learn which phase a killed run was in. Unset, as in
// normal use, they do nothing. docs/training.md, "Test hooks".

#include <chrono>
#include <string>

namespace mlpo::train {

struct TrainTestHooks {
  // MLPO_TEST_SLOW_CHECKPOINT_MS=N: sleep N ms after each checkpoint file (and the rename).
  std::chrono::milliseconds checkpoint_pause{0};
  // MLPO_TRACE_PHASES=FILE: append the phases the loop enters to FILE (phase_trace.hpp).
  std::string trace_path;
};

// The hooks the environment sets now.
TrainTestHooks train_test_hooks();

}  // namespace mlpo::train
