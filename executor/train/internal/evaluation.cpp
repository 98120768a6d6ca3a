#include "executor/train/internal/evaluation.hpp"

#include <span>
#include <vector>

#include "core/error.hpp"

namespace mlpo::train {

ValidationSet::ValidationSet(data::TokenData data, std::int64_t tokens, int micro_batch, std::int64_t seq_len)
    : data_(std::move(data)), micro_batch_(micro_batch), seq_len_(seq_len) {
  const std::int64_t batch_tokens = static_cast<std::int64_t>(micro_batch) * seq_len;
  const std::int64_t available = data_.windows() / micro_batch;
  if (tokens < 0) throw Error("--eval-tokens: must be >= 0 (0: all of --eval-data)");
  micro_batches_ = tokens == 0 ? available : tokens / batch_tokens;
  if (micro_batches_ == 0)
    throw Error("--eval-tokens " + std::to_string(tokens) + ": less than one micro-batch of " +
                std::to_string(micro_batch) + " sequences of " + std::to_string(seq_len) + " tokens (" +
                std::to_string(batch_tokens) + " tokens) of --eval-data, which holds " +
                std::to_string(data_.windows()) + " such sequences; give --eval-tokens >= " +
                std::to_string(batch_tokens) + " and enough eval data");
  if (micro_batches_ > available)
    throw Error(
        "--eval-tokens " + std::to_string(tokens) + ": --eval-data " + data_.files().front().path() +
        (data_.files().size() > 1 ? " (and " + std::to_string(data_.files().size() - 1) + " more files)"
                                  : "") +
        " holds " + std::to_string(data_.windows()) + " sequences of " + std::to_string(seq_len) +
        " tokens (" + std::to_string(available * batch_tokens) +
        " tokens in whole micro-batches); give --eval-tokens <= " + std::to_string(available * batch_tokens) +
        " or more eval data");
}

std::string ValidationSet::description() const {
  std::string of = data_.files().front().path();
  if (data_.files().size() > 1) of += " and " + std::to_string(data_.files().size() - 1) + " more files";
  return std::to_string(sequences()) + " sequences of " + std::to_string(seq_len_) + " tokens (" +
         std::to_string(tokens()) + " tokens) of " + of;
}

double ValidationSet::loss(model::TransformerModel& model, StepCollectives& collectives, int rank,
                           int ranks) const {
  const std::int64_t per_rank = (micro_batches_ + ranks - 1) / ranks;
  const auto T = static_cast<std::size_t>(seq_len_);
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(micro_batch_) * T), targets(inputs.size());
  std::vector<double> mine(static_cast<std::size_t>(per_rank)),
      all(static_cast<std::size_t>(per_rank * ranks));
  for (std::int64_t i = 0; i < per_rank; ++i) {
    const std::int64_t j = rank * per_rank + i;
    const std::int64_t batch = j < micro_batches_ ? j : 0;  // past the end: the same forwards on every rank
    for (int b = 0; b < micro_batch_; ++b)
      data_.window(batch * micro_batch_ + b, std::span(inputs).subspan(static_cast<std::size_t>(b) * T, T),
                   std::span(targets).subspan(static_cast<std::size_t>(b) * T, T));
    const double loss = model.forward(inputs, targets);
    mine[static_cast<std::size_t>(i)] = j < micro_batches_ ? loss : 0.0;
  }
  collectives.all_gather(std::span<const double>(mine), std::span<double>(all));
  double sum = 0;
  for (std::int64_t j = 0; j < micro_batches_; ++j) sum += all[static_cast<std::size_t>(j)];
  return sum / static_cast<double>(micro_batches_);
}

}  // namespace mlpo::train
