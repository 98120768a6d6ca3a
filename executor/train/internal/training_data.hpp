#pragma once
// The data of a training run, opened and checked before anything is written: the training
// token data (--data), the held-out set (--eval-data, optional), and, when --tokenizer names
// the tokenizer the data was made with, that it fits the model and is the one the token
// files record (docs/training.md, "Data").

#include <optional>

#include "executor/train/internal/evaluation.hpp"
#include "executor/data/token_data.hpp"
#include "executor/train/training_loop.hpp"

namespace mlpo::train {

struct TrainingData {
  data::TokenData train;
  std::optional<ValidationSet> validation;
};

// Throws mlpo::Error naming the flag, the file and the numbers: data the model's vocab does
// not cover, a tokenizer larger than the model's vocab or other than the one the data
// records, a missing tokenizer file, an eval set larger than --eval-data.
TrainingData open_training_data(const TrainOptions& options);

}  // namespace mlpo::train
