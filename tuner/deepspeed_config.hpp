#pragma once
// DeepSpeedConfig: `mlpo-tune --emit deepspeed` — the closest run DeepSpeed ZeRO-3 can do on
// the profiled machine, as a ds_config.json, with MLPO's prediction of it. DeepSpeed keeps
// the optimizer state on one place (offload_optimizer: one nvme_path, or host memory), so
// the plan is the tuner's baseline (ZeRO-3 offload style: one tier, fp32 gradients flushed,
// ascending order, no cache, the next sub-group read while one is updated), searched over
// the sub-group sizes and the I/O settings (block size, queue depth) the profile measured on
// that tier, and ranked with SimGrid. Keys and their meanings: DeepSpeed's configuration page
// and its config classes (docs/simulator.md names each; read at DeepSpeed 0.19.6):
//   sub_group_size            the plan's subgroup elements
//   offload_optimizer         device nvme + nvme_path (a streamed tier's path) or device cpu
//                             (a tier in host memory); pin_memory true (pinned buffers);
//                             buffer_count 4 tensors (fp32 weights, two moments, gradient) per
//                             sub-group in flight (prefetch depth + 1); pipeline_read/_write
//                             true (reads ahead, writes behind, as the plan does)
//   offload_param             device cpu, pin_memory true where the plan holds the weights in
//                             host memory: always with several ranks (MLPO's ZeRO-3 keeps each
//                             rank's bf16 shard on the host and gathers a part at a time, as
//                             the prediction models), and on one rank with --param-offload
//   aio                       block_size, queue_depth from the chosen I/O setting;
//                             intra_op_parallelism 1 (one stream per rank and direction, as
//                             modelled; DeepSpeed <= 0.16.3 calls it thread_count);
//                             single_submit false, overlap_events true (batched, overlapped)
//   batch keys, bf16, AdamW   the cluster shape; mlpo-run's default AdamW and clipping
// Refused, not guessed: a profile without a GPU, --update-only, a machine where no single
// tier holds the state.

#include <string>

#include "core/json_io.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

struct DeepSpeedPlan {
  Plan plan;  // baseline mode: the one tier, subgroup size and I/O setting of the config
  sim::SimulationResult simulated;
  Json config;                 // ds_config.json
  std::size_t candidates = 0;  // (subgroup size, I/O setting) pairs simulated
};

// The ds_config.json of a baseline-mode plan (one tier): a pure mapping, keys above.
Json deepspeed_config(const Plan& plan, bool param_offload);

// Searches and simulates the DeepSpeed run of `request` (mlpo::Error for what is refused).
DeepSpeedPlan deepspeed_plan(const TuneRequest& request);

// What was written and predicted, and MLPO's own plan beside it when `mlpo` is given.
std::string format_deepspeed(const DeepSpeedPlan& ds, const TuneResult* mlpo);

}  // namespace mlpo::tune
