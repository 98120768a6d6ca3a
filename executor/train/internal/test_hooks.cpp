#include "executor/train/internal/test_hooks.hpp"

#include <cstdlib>

namespace mlpo::train {

TrainTestHooks train_test_hooks() {
  TrainTestHooks hooks;
  if (const char* ms = std::getenv("MLPO_TEST_SLOW_CHECKPOINT_MS"))
    hooks.checkpoint_pause = std::chrono::milliseconds(std::atoll(ms));
  if (const char* path = std::getenv("MLPO_TRACE_PHASES")) hooks.trace_path = path;
  return hooks;
}

}  // namespace mlpo::train
