#pragma once
// ValidationSet: the validation loss of the current weights on a fixed held-out set
// (`mlpo-run --eval-data FILE --eval-every N --eval-tokens T`).
//
// The set is the first windows of the eval data (TokenData::window: file 0's non-overlapping
// seq_len + 1 token windows, then file 1's, ...), as many whole micro-batches of B sequences
// as fit in T predicted tokens: floor(T / (B x seq_len)) x B sequences (T = 0: every whole
// micro-batch of the data). No randomness: the same sequences every time, in every run.
//
// loss() runs forward only: no backward, no gradient, no optimizer step, and the training
// data position is not touched, so a run with evaluation trains bitwise as one without.
// Micro-batch j's loss is computed by one rank (rank r takes the j in [r*c, r*c + c), c =
// ceil(E / ranks); a rank past E runs micro-batch 0 again and drops it, so every rank makes
// the same forwards, which ZeRO-3 gathers need), gathered, and summed in j order: the loss is
// bitwise the same under every plan and on 1, 2, 4, ... ranks (a micro-batch's forward is).

#include <cstdint>
#include <string>

#include "executor/model/transformer_model.hpp"
#include "executor/train/internal/step_collectives.hpp"
#include "executor/data/token_data.hpp"

namespace mlpo::train {

class ValidationSet {
 public:
  // `data` opened for the model's vocab and sequence length. Throws mlpo::Error naming
  // --eval-tokens and --eval-data when T is less than one micro-batch or more than the data
  // holds.
  ValidationSet(data::TokenData data, std::int64_t tokens, int micro_batch, std::int64_t seq_len);

  std::int64_t sequences() const { return micro_batches_ * micro_batch_; }
  std::int64_t tokens() const { return sequences() * seq_len_; }  // predicted tokens
  // "64 sequences of 32 tokens (2048 tokens) of /data/val.bin".
  std::string description() const;

  // The mean cross-entropy (nats/token) of `model`'s current weights over the set.
  // Collective: every rank calls it alike.
  double loss(model::TransformerModel& model, StepCollectives& collectives, int rank, int ranks) const;

 private:
  data::TokenData data_;
  int micro_batch_;
  std::int64_t seq_len_;
  std::int64_t micro_batches_ = 0;
};

// Whether to evaluate after `step`: every `every` steps (0: never in between) and after the
// run's last step.
inline bool evaluation_due(std::int64_t every, std::int64_t step, std::int64_t last_step) {
  return (every > 0 && step % every == 0) || step == last_step;
}

}  // namespace mlpo::train
