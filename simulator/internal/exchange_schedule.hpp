#pragma once
// ExchangeSchedule: the ZeRO-3 traffic of one rank in forward and backward, as the executor's
// LayerExchange runs it (executor/comm/layer_exchange.hpp, docs/comm.md), for the simulator's
// two models. With W ranks every part of a pass (embedding, each block, the head) needs its
// full bf16 weights: an all-gather, queued one part ahead on one background thread so it
// overlaps the previous part's compute (two buffers: the gather of part i+1 starts when part
// i is handed out). On the last micro-step, backward hands each part's fp32 gradients to a
// reduce-scatter on the same thread, in queue order, through two staging buffers (the
// hand-over of part i waits for the reduce-scatter of part i-2), and the step drains them
// before the update. On a GPU the gathered weights go to the device (one device buffer:
// between the gather and the part's compute) and the full fp32 gradients to the host (before
// the reduce-scatter is queued), both synchronous with the rank's compute. With one rank, or
// without collective figures in the profile, nothing is added (the passes are their compute
// alone).
//
// A collective over a full buffer of N bytes costs `latency + N (W-1)/W / bus_bandwidth`
// (CollectiveRates in core/profile.hpp). On the CPU backend the bytes' part of it is CPU
// work on the rank's compute cores (on_compute_cores); on a GPU it runs beside the compute.
// The analytic model evaluates the schedule in closed form (pass_seconds); the SimGrid model
// runs it with a per-rank exchange actor.

#include <vector>

#include "core/rates.hpp"
#include "simulator/internal/workload.hpp"

namespace mlpo::sim {

// One rank's collective costs. modelled() is false with one rank or without figures.
struct CollectiveCost {
  double ranks = 1;
  double all_gather_bps = 0;  // bus bytes/s
  double reduce_scatter_bps = 0;
  double latency_s = 0;
  double h2d_bps = 0;  // PCIe of a GPU rank (0: the CPU backend, whose copies are memcpys)
  double d2h_bps = 0;
  // The CPU backend: MPI's shared-memory copies and the reduce-scatter's sums run on the
  // cores the rank computes on (its compute threads fill them), so a collective's time beyond
  // its latency is taken from compute rather than overlapped with it.
  bool on_compute_cores = false;

  bool modelled() const { return ranks > 1 && all_gather_bps > 0 && reduce_scatter_bps > 0; }
  // Of a collective of `seconds`, the part that keeps a core busy (its bytes; the latency is a
  // wait): 0 unless on_compute_cores, and for no collective (seconds < 0, PassPart's "none").
  double core_seconds(double seconds) const;
  double gather_s(double elements) const;          // a layer's bf16 weights (full elements)
  double reduce_scatter_s(double elements) const;  // a layer's fp32 gradients (full elements)
  double to_device_s(double elements) const;       // gathered bf16 weights to the GPU
  double to_host_s(double elements) const;         // full fp32 gradients to the host
};

CollectiveCost collective_cost_of(const Rates& rates, const Workload& w);

// One part of a pass: its compute and the collectives around it (seconds; < 0: none).
struct PassPart {
  const LayerWork* layer = nullptr;
  double compute_s = 0;          // its forward or backward at the profile's rate for its part
  double gather_s = -1;          // all-gather of its weights, before it runs
  double reduce_scatter_s = -1;  // reduce-scatter of its gradients, after it ran
  double to_device_s = 0;        // its gathered weights to the GPU, after the gather, before compute
  double to_host_s = 0;          // its fp32 gradients to the host, before the reduce-scatter
};

// Forward: embedding, blocks, head, each gathered. Backward: head, blocks in reverse (each
// gathered again), then the embedding (not gathered); reduce-scatters on the last micro-step.
// Without modelled collectives: the compute alone.
std::vector<PassPart> forward_parts(const Workload& w, const ComputeRates& compute, const CollectiveCost& c);
std::vector<PassPart> backward_parts(const Workload& w, const ComputeRates& compute, const CollectiveCost& c,
                                     bool last_micro_step);

// The index of the next part after `i` that is gathered, or parts.size().
std::size_t next_gathered(const std::vector<PassPart>& parts, std::size_t i);

// Seconds of one pass on one rank: the exchange thread serves gathers and reduce-scatters in
// queue order; compute waits for its part's gather, a hand-over for the reduce-scatter two
// before it, the pass's end for all.
double pass_seconds(const std::vector<PassPart>& parts);

// A pass's own work on the rank: every part's compute and synchronous PCIe copies.
double pass_work_s(const std::vector<PassPart>& parts);
// The core seconds (CollectiveCost::core_seconds) of every gather and reduce-scatter of a pass.
double pass_core_seconds(const std::vector<PassPart>& parts, const CollectiveCost& c);

// The same pass with `c`'s core sharing: on the compute cores (c.on_compute_cores) the pass
// takes at least its compute plus every collective's core seconds one after the other, plus
// the first gather's latency (nothing computes before it) — the processor-sharing total the
// SimGrid model reaches by running each collective's bytes as work on the rank's compute host.
double pass_seconds(const std::vector<PassPart>& parts, const CollectiveCost& c);

// The step's small collectives after backward (the losses' all-gather and the gradient
// norm's all-reduce): their latencies.
double small_collectives_s(const CollectiveCost& c);

}  // namespace mlpo::sim
