#pragma once
// Learning-rate schedule: linear warm-up, then cosine decay to a floor.
//
//   step s = 1, 2, ... (the AdamW step that uses the rate)
//   s <= warmup:            lr(s) = max_lr * s / warmup
//   warmup < s < decay_end: lr(s) = min_lr + (max_lr - min_lr) * (1 + cos(pi * r)) / 2,
//                           r = (s - warmup) / (decay_end - warmup)
//   s >= decay_end:         lr(s) = min_lr
//
// Computed in double and rounded to float once, so it is the same on every machine for a
// given (schedule, s).

#include <cstdint>

namespace mlpo::train {

struct LrSchedule {
  double max_lr = 1e-3;
  double min_lr = 1e-4;
  std::int64_t warmup_steps = 0;
  std::int64_t decay_end = 0;  // last step of the cosine; <= warmup means constant max_lr after warm-up

  float at(std::int64_t step) const;
};

// Throws mlpo::Error naming the option for negative rates or min_lr > max_lr.
void validate(const LrSchedule& schedule);

}  // namespace mlpo::train
