#include "executor/train/internal/training_data.hpp"

#include "core/error.hpp"
#include "executor/data/tokenizer.hpp"

namespace mlpo::train {

namespace {

void check_recorded_vocab(const data::TokenData& data, const data::Tokenizer& tokenizer,
                          const std::string& flag) {
  for (const data::TokenFile& f : data.files())
    if (f.recorded_vocab() != 0 && f.recorded_vocab() != tokenizer.vocab())
      throw Error(flag + " " + f.path() + ": was made with a tokenizer of " +
                  std::to_string(f.recorded_vocab()) + " tokens (its header records it), but --tokenizer " +
                  tokenizer.model_path() + " has " + std::to_string(tokenizer.vocab()) +
                  "; give the tokenizer the data was made with, or prepare the data "
                  "again with this one (mlpo-run prepare-data --tokenizer)");
}

}  // namespace

TrainingData open_training_data(const TrainOptions& o) {
  if (o.eval_every < 0) throw Error("--eval-every: must be >= 0 (0: only after the last step)");
  if (o.eval_data.empty() && (o.eval_every > 0 || o.eval_tokens > 0))
    throw Error("--eval-every and --eval-tokens need --eval-data (the held-out token file to evaluate on)");
  TrainingData d{data::TokenData(o.data, o.model.vocab, o.model.seq_len, o.token_bytes, "--data"),
                 std::nullopt};
  std::optional<data::TokenData> eval;
  if (!o.eval_data.empty())
    eval.emplace(o.eval_data, o.model.vocab, o.model.seq_len, o.token_bytes, "--eval-data");
  if (!o.tokenizer.empty()) {
    const data::Tokenizer tokenizer = data::Tokenizer::sentencepiece(o.tokenizer, "--tokenizer");
    if (tokenizer.vocab() > o.model.vocab)
      throw Error("--tokenizer " + o.tokenizer + ": vocabulary of " + std::to_string(tokenizer.vocab()) +
                  " tokens is larger than the model's vocab of " + std::to_string(o.model.vocab) +
                  " (--model " + o.model.name + "); use a model with vocab >= " +
                  std::to_string(tokenizer.vocab()) + " (a model JSON file)");
    check_recorded_vocab(d.train, tokenizer, "--data");
    if (eval) check_recorded_vocab(*eval, tokenizer, "--eval-data");
  }
  if (eval) d.validation.emplace(std::move(*eval), o.eval_tokens, o.micro_batch, o.model.seq_len);
  return d;
}

}  // namespace mlpo::train
