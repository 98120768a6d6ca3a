#include "executor/train/internal/lr_schedule.hpp"

#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace mlpo::train {

float LrSchedule::at(std::int64_t step) const {
  if (warmup_steps > 0 && step <= warmup_steps)
    return static_cast<float>(max_lr * static_cast<double>(step) / static_cast<double>(warmup_steps));
  if (decay_end <= warmup_steps) return static_cast<float>(max_lr);
  if (step >= decay_end) return static_cast<float>(min_lr);
  const double r = static_cast<double>(step - warmup_steps) / static_cast<double>(decay_end - warmup_steps);
  return static_cast<float>(min_lr + (max_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * r)));
}

void validate(const LrSchedule& s) {
  if (!(s.max_lr > 0) || !std::isfinite(s.max_lr)) throw Error("--lr: must be a positive number");
  if (!(s.min_lr >= 0) || s.min_lr > s.max_lr) throw Error("--min-lr: must be between 0 and --lr");
  if (s.warmup_steps < 0) throw Error("--warmup-steps: must be >= 0");
}

}  // namespace mlpo::train
