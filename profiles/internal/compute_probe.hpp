#pragma once
// Compute probe: what the executor's own forward and backward achieve on a backend, part by
// part, for one model's widths — the calibration mlpo-profile stores (host.cpu_model, a
// ModelComputeFigures of core/profile.hpp) and the simulator predicts both phases from.
//
// It builds the TransformerModel the trainer builds (same backend and thread layout, bf16
// storage, resident weights) with the model's widths but three layers, feeds it random tokens,
// and runs the trainer's micro-batch: forward, then backward with the one-rank gradient
// hand-over (executor/compute/gradient_handover.hpp: bf16 cast and copy to host memory) in its
// hook. A provider around the resident weights synchronizes the backend and reads the clock
// at every acquire, so a part's time is from its acquire to the next one:
//
//   forward    [start, layer 0)  embedding      layer 0, 1, 2      [head, end)  head + loss
//   backward   [start, layer 2)  head           layer 2 (its forward is not recomputed)
//              layer 1 (recomputed forward + backward)      [layer 0, end)  layer 0 + embedding
//
// A layer's forward is the mean of the three; the head's is the rest (embedding, head, loss).
// A layer's backward is the mean of the three layers' intervals, the last one's skipped
// recompute added back (one layer forward) and the embedding's scatter-add spread over them;
// the head's is its own interval. So a model of L layers takes head + L x layer forward and
// head + L x layer - layer forward backward, the way the simulator adds them up
// (ComputeRates::last_layer_skips_recompute, core/rates.hpp). Every part is a sum of
// intervals, never negative however loaded the machine.
// Each part's time is turned into an effective FLOP/s against core/accounting.hpp's counts
// (layer_forward_flops_per_token, head_forward_flops_per_token; backward 3x forward), the
// figures the simulator divides the same counts by.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "kernels/backend.hpp"

namespace mlpo::profiles {

struct ComputeProbeOptions {
  ModelSpec model;  // widths (vocab, hidden, heads, ffn...); its layer count is not used
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 0;  // 0: the model's
  int repetitions = 3;       // timed micro-batches, after one warm-up
};

// Each repetition's effective GFLOP/s per part and pass (the caller summarizes them into a
// ModelComputeFigures of core/profile.hpp).
struct ComputeProbeSamples {
  std::vector<double> layer_forward_gflops, layer_backward_gflops, head_forward_gflops, head_backward_gflops;
};

// Runs the probe; `progress` gets one line per repetition. Throws mlpo::Error when the
// backend cannot hold the three-layer model.
ComputeProbeSamples probe_model_compute(Backend& backend, const ComputeProbeOptions& options,
                                        const std::function<void(const std::string&)>& progress = {});

}  // namespace mlpo::profiles
