#pragma once
// Host memory of a training run, part by part, known before anything large is allocated, so a
// run that cannot fit is refused at start with the numbers and the fix instead of growing until
// the machine swaps or the kernel kills it.
//
// One rank's parts (training_host_memory):
//  * on the CPU backend, whose "device" memory is host memory, the model as the trainer builds
//    it — training_device_memory (compute_backend.hpp): weights (all, or --param-offload's two
//    slots), gradients (all, the streamed part buffers, or the micro-batch partial sums) and
//    activations (per-layer checkpoints, one layer's intermediates, logits for --micro-batch x
//    --seq-len, the gradient hand-over's staging) — less the resident provider's load staging
//    chunk, which training never allocates (it uploads bf16 directly);
//  * on every backend, the host side of the step: the rank's bf16 weights (the update's output)
//    and bf16 gradient (its input), with ZeRO-3 the fp32 gradient shard, two fp32 staging
//    buffers and two bf16 gather buffers of the largest range, the gradient-norm chunk sums
//    and the token buffers;
//  * the offload engine's (offload::host_memory_need): pinned subgroup buffers, host cache,
//    memory tiers and mapped host tiers.
// Each item's `field` is the fix that shrinks it ("use --param-offload"; "plan buffers" for a
// plan field), which the refusal lists. Not counted: the process itself, OpenBLAS's per-thread
// buffers, the page cache of the memory-mapped data.
// Tests build the trainer's objects on a backend that counts allocations and compare.

#include <cstdint>
#include <optional>
#include <string>

#include "core/plan.hpp"
#include "core/rank_shard.hpp"
#include "executor/offload/host_memory_need.hpp"
#include "executor/compute/compute_backend.hpp"

namespace mlpo::train {

// What one rank of the run allocates in host memory; `cpu_backend`: the model's buffers are in
// host memory too. `shard`: the rank's part of the parameters (all of them for one process).
offload::HostMemoryNeed training_host_memory(const model::ModelShape& shape,
                                             const compute::TrainingFootprint& footprint, const Plan& plan,
                                             const RankShard& shard, bool cpu_backend);

struct HostMemoryAvailable {
  std::uint64_t bytes = 0;
  std::string source;  // "MemAvailable" or "--host-memory-limit"
};

// The host memory the check plans for: MemAvailable plus what this run's host tier files hold
// already (a restart: memory taken by the run itself), or `limit` bytes when that is less
// (--host-memory-limit; 0: no limit). nullopt when /proc/meminfo has no MemAvailable and
// there is no limit.
std::optional<HostMemoryAvailable> host_memory_for_run(const Plan& plan, const RankShard& shard,
                                                       const std::string& run, std::uint64_t limit);

// Throws mlpo::Error (one line) when `ranks_here` x need.total() exceeds `available`: the
// bytes needed and available, every part with its bytes, and the fixes of the parts there are.
// `who` starts the message ("rank 0"). Returns the line the run notes at start.
std::string check_training_host_memory(const offload::HostMemoryNeed& need, int ranks_here,
                                       const HostMemoryAvailable& available, const std::string& who);

}  // namespace mlpo::train
