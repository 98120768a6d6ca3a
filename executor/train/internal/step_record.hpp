#pragma once
// The job's record of one training step (core/step_record: the run log's one record type;
// rank 0 logs it, mlpo-run --log, and train() returns it as JSON in TrainResult::steps).
// step_record() builds it from what the step computed, which is the same on every rank, and
// what this rank measured, reduced over the ranks: times (`*_s`, a tier's `busy_s`,
// `slot_wait_s`) are the slowest rank's, counts and bytes the sum over the ranks.
//
// Collective: every rank calls step_record() once per step, after the step's update and
// checkpoint (two small reductions of 12 + 2 x tiers doubles and 4 + 2 x tiers integers).

#include <cstdint>
#include <optional>

#include "core/step_record.hpp"
#include "executor/offload/update_pipeline.hpp"
#include "executor/train/internal/step_collectives.hpp"

namespace mlpo::train {

// What the step computed: the same on every rank.
struct StepOutcome {
  std::int64_t step = 0;
  double loss = 0;       // mean over all ranks' micro-batches
  float lr = 0;          // as AdamW used it
  double grad_norm = 0;  // global, before clipping
  float clip_scale = 1;  // the gradient multiplier from clipping
  double tokens = 0;     // tokens of all ranks' micro-batches
  // The validation loss of the weights after the step, on steps that evaluated, and the
  // seconds it took (rank 0's; not part of step_s).
  std::optional<double> eval_loss;
  double eval_s = 0;
};

// What this rank measured in the step, in seconds.
struct StepTimes {
  double step_s = 0;                  // the whole step, checkpoint included
  double forward_s = 0;               // summed over micro-batches
  double backward_s = 0;              // summed over micro-batches, with the hand-over and the norm
  double weights_to_device_s = 0;     // the weight uploads' tail after the update
  double checkpoint_s = 0;            // 0 without a checkpoint in this step
  double gradient_copy_wait_s = 0;    // part of backward_s: the hand-over that did not overlap it
  std::int64_t checkpoint_bytes = 0;  // this rank's checkpoint files; 0 without a checkpoint
  // The share of its node's CPU time the hypervisor took during the step (core/cpu_ticks.hpp);
  // none where /proc/stat cannot be read. Logged as the largest over the nodes.
  std::optional<double> cpu_steal;
  // ZeRO-3 ranks (several): over the step's forward and backward, the CPU seconds of the
  // LayerExchange's thread and the seconds compute waited for gathered weights
  // (comm::ExchangeTotals); none with one rank.
  std::optional<double> exchange_cpu_s;
  std::optional<double> gather_wait_s;
};

// Weights copied to the device in the step (host-streamed weights only).
struct WeightFetches {
  std::int64_t bytes = 0;
  std::int64_t demand_fetches = 0;  // parts fetched only when acquired, not ahead
};

// `update`: this rank's update phase. `fetches`: added as weight_fetch_bytes and
// weight_demand_fetches when given (this rank's own: streamed weights run on one rank).
StepRecord step_record(const StepOutcome& outcome, const StepTimes& mine, const offload::UpdateStats& update,
                       const std::optional<WeightFetches>& fetches, StepCollectives& collectives);

}  // namespace mlpo::train
