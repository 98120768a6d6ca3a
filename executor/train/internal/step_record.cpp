#include "executor/train/internal/step_record.hpp"

#include <span>
#include <vector>

namespace mlpo::train {

StepRecord step_record(const StepOutcome& outcome, const StepTimes& mine, const offload::UpdateStats& update,
                       const std::optional<WeightFetches>& fetches, StepCollectives& collectives) {
  // One array of times and one of counts, each reduced at once: the step's 9 times, its CPU
  // steal and 2 exchange figures (-1: none) and 5 counts, then each tier's 2 of each.
  const std::size_t tiers = update.tiers.size();
  std::vector<double> times = {mine.step_s,
                               mine.forward_s,
                               mine.backward_s,
                               update.seconds,
                               update.adam_s,
                               update.prefetch_stall_s,
                               mine.weights_to_device_s,
                               mine.checkpoint_s,
                               mine.gradient_copy_wait_s,
                               mine.cpu_steal.value_or(-1.0),
                               mine.exchange_cpu_s.value_or(-1.0),
                               mine.gather_wait_s.value_or(-1.0)};
  std::vector<std::int64_t> counts = {update.cache_hits, update.reads, update.writes, update.elements,
                                      mine.checkpoint_bytes};
  for (const auto& t : update.tiers) {
    times.insert(times.end(), {t.busy_s, t.slot_wait_s});
    counts.insert(counts.end(),
                  {static_cast<std::int64_t>(t.read_bytes), static_cast<std::int64_t>(t.write_bytes)});
  }
  collectives.all_reduce_max(std::span<double>(times));
  collectives.all_reduce_sum(std::span<std::int64_t>(counts));
  StepRecord rec{.step = outcome.step,
                 .loss = outcome.loss,
                 .grad_norm = outcome.grad_norm,
                 .forward_s = times[1],
                 .backward_s = times[2],
                 .update_s = times[3],
                 .prefetch_stall_s = times[5],
                 .cache_hits = counts[0],
                 .reads = counts[1],
                 .writes = counts[2],
                 .elements = counts[3],
                 .adam_s = times[4],
                 .lr = outcome.lr,
                 .clip_scale = outcome.clip_scale,
                 .tokens = outcome.tokens,
                 .tokens_per_s = outcome.tokens / times[0],
                 .step_s = times[0],
                 .weights_to_device_s = times[6],
                 .checkpoint_s = times[7],
                 .gradient_copy_wait_s = times[8],
                 .eval_loss = outcome.eval_loss};
  for (std::size_t t = 0; t < tiers; ++t)
    rec.tiers.push_back(
        {update.tiers[t].name, counts[5 + 2 * t], counts[6 + 2 * t], times[12 + 2 * t], times[13 + 2 * t]});
  if (counts[4] > 0) rec.checkpoint_bytes = counts[4];  // steps with a checkpoint only
  if (times[9] >= 0) rec.cpu_steal = times[9];
  if (times[10] >= 0) rec.exchange_cpu_s = times[10];
  if (times[11] >= 0) rec.gather_wait_s = times[11];
  if (outcome.eval_loss) rec.eval_s = outcome.eval_s;
  if (fetches) {
    rec.weight_fetch_bytes = fetches->bytes;
    rec.weight_demand_fetches = fetches->demand_fetches;
  }
  return rec;
}

}  // namespace mlpo::train
