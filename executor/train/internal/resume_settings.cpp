#include "executor/train/internal/resume_settings.hpp"

#include <cstdint>

namespace mlpo::train {

Json resume_settings(const TrainOptions& o, const LrSchedule& lr, unsigned blas_threads,
                     const data::TokenData& data, int ranks) {
  return Json{{"seq_len", o.model.seq_len},
              {"micro_batch", o.micro_batch},
              {"grad_accum", static_cast<std::int64_t>(o.grad_accum) * ranks},
              {"ranks", ranks},
              {"lr", lr.max_lr},
              {"min_lr", lr.min_lr},
              {"warmup_steps", lr.warmup_steps},
              {"lr_decay_end", lr.decay_end},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"eps", o.eps},
              {"weight_decay", o.weight_decay},
              {"weight_decay_on", o.weight_decay_on},
              {"max_grad_norm", o.max_grad_norm},
              {"blas_threads", blas_threads},
              {"data_tokens", data.tokens()}};
}

std::vector<std::string> resume_setting_warnings(const Json& run, const Json& checkpoint) {
  std::vector<std::string> warnings;
  for (const auto& [key, value] : run.items())
    if (key != "ranks" && (!checkpoint.contains(key) || checkpoint[key] != value))
      warnings.push_back("warning: resume: " + key + " is " + value.dump() +
                         " but the checkpoint was made with " +
                         (checkpoint.contains(key) ? checkpoint[key].dump() : "none") +
                         "; the run will not match an uninterrupted one");
  return warnings;
}

}  // namespace mlpo::train
