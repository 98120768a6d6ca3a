#pragma once
// UpdatePipeline: the update phase of one rank. For each step of the iteration's schedule
// (SubgroupCache::plan_iteration) it fetches the subgroup's (p, m, v) — from the host cache,
// from process memory, or from its tier — runs the fused AdamW on it with the bf16 gradient
// (or the fp32 gradient read back, in baseline mode), writes the new bf16 weights, and
// either keeps the subgroup in the cache or writes it back.
//
// Overlap: every file tier has a reader thread and a writer thread of its own
// (PipelineReaders, PipelineWriters), so all tiers stream at once. Readers run ahead of AdamW
// by at most `prefetch_depth` reads (cache hits and resident subgroups do not count); writers
// drain behind it; the calling thread runs AdamW (over the ThreadPool) in step order. Every
// transfer holds one of its tier's node-wide TierSlots while in flight. The pipeline's own
// waits (prefetch window, a finished read, a free buffer, a pending write) block on a
// condition signalled by the event that ends them, never on a timer; only taking a TierSlot
// waits as TierSlots does (across processes). All buffers are leases of one PinnedBufferPool
// sized (buffers + cache) x subgroup buffer, so memory is bounded and a cache entry is just a
// lease kept instead of written.
//
// Integrity (plan.crc, on by default): streamed extents carry TierIo's per-extent CRC32C;
// subgroups in a host tier's mapped file are verified chunk by chunk in AdamW's own pass
// before it reads them and recorded after it writes them (InPlaceIntegrity), and in
// visit_state. A mismatch is an error like any other.
//
// Errors: the first error anywhere — a transfer, a CRC mismatch, AdamW's parameter check, a
// callback that throws — stops the pipeline; update() stops and joins its reader and writer
// threads (also while an exception unwinds it), lets in-flight transfers finish, returns
// every buffer to the pool, then throws it (mlpo::Error naming tier, file and offset).
// Never hangs and never terminates the process.
//
// The numbers do not depend on any of this: AdamW is element-wise and each element is
// updated exactly once per iteration with the same inputs, wherever its state came from —
// its weight decay too, which a WeightDecayMask gives per element, not per subgroup.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bf16.hpp"
#include "core/plan.hpp"
#include "core/thread_pool.hpp"
#include "executor/io/block_device_stats.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_slots.hpp"
#include "executor/offload/state_store.hpp"
#include "executor/offload/weight_decay_mask.hpp"
#include "core/update_order.hpp"
#include "kernels/cpu/adamw.hpp"

namespace mlpo::offload {

class PipelineReaders;
class PipelineWriters;

struct TierIterationStats {
  std::string name;
  std::uint64_t read_bytes = 0;
  std::uint64_t write_bytes = 0;
  double busy_s = 0;
  double slot_wait_s = 0;
  // The tier's block device over the same span (node-wide: every process's I/O to it), when
  // the tier has one (io::BlockDeviceStats): busy_s near the phase's seconds means the device
  // was the limit; less means the pipeline left it idle.
  std::optional<io::BlockDeviceSnapshot> device;
};

struct UpdateStats {
  double seconds = 0;           // wall time of the whole phase, write-back included
  double adam_s = 0;            // time in AdamW
  double prefetch_stall_s = 0;  // time AdamW waited for a subgroup's read
  std::int64_t subgroups = 0;
  std::int64_t cache_hits = 0;
  std::int64_t reads = 0;   // subgroups read from a tier
  std::int64_t writes = 0;  // subgroups written to a tier
  std::int64_t elements = 0;
  std::vector<TierIterationStats> tiers;  // per file tier
};

struct PipelineOptions {
  std::int64_t buffers = 4;
  std::int64_t prefetch_depth = 2;
  std::int64_t cache_subgroups = 0;
  GradientPolicy gradients = GradientPolicy::delayed;
};

// Bytes of the pinned pool a pipeline with these options needs for `layout`.
std::uint64_t pipeline_pool_bytes(const SubgroupLayout& layout, const PipelineOptions& options);

class UpdatePipeline {
 public:
  // `slots[t]` limits file tier t across the node (null = no limit). Everything passed in
  // must outlive the pipeline.
  UpdatePipeline(StateStore& store, io::PinnedBufferPool& pool, std::vector<io::TierSlots*> slots,
                 ThreadPool& threads, PipelineOptions options);
  ~UpdatePipeline();
  UpdatePipeline(const UpdatePipeline&) = delete;
  UpdatePipeline& operator=(const UpdatePipeline&) = delete;

  // Which elements AdamW decays from the next update on (default: all of them).
  void set_weight_decay_mask(WeightDecayMask mask) { decay_mask_ = std::move(mask); }

  // Writes the initial state: p from init(local element index), m = v = 0.
  void initialize(const std::function<float(std::int64_t)>& init);

  // Writes a given state (a checkpoint's) to every subgroup's home: fill(subgroup, p, m, v)
  // sets the subgroup's sg.elements values of each array, and the pipeline writes them to the
  // subgroup's tier (or memory). Called on a pipeline with an empty cache (before the first
  // update); whatever the tier files held before is overwritten, never read.
  void load_state(const std::function<void(const Subgroup&, float*, float*, float*)>& fill);

  // Baseline backward: writes the gradient as fp32 to each subgroup's gradient extent.
  // Returns the seconds it took.
  double flush_gradients(std::span<const bf16> grads);

  // One update phase over `steps`. grads: this rank's bf16 gradient (shard order);
  // weights_out (may be empty): receives the bf16 copy of the new p. weights_written (may be
  // empty) is called on the calling thread as soon as a subgroup's bf16 weights are in
  // weights_out, so they can travel to the device while later subgroups are updated.
  UpdateStats update(const std::vector<UpdateStep>& steps, std::span<const bf16> grads,
                     const AdamWParams& adam, std::span<bf16> weights_out,
                     const std::function<void(const Subgroup&)>& weights_written = {});

  // Calls visit(subgroup, p, m, v) for every subgroup in ascending order with its current
  // state, wherever it lives (cache, memory, tier). Does not change anything.
  void visit_state(
      const std::function<void(const Subgroup&, const float*, const float*, const float*)>& visit);

 private:
  struct StepState;
  struct StepInputs {  // update()'s arguments that every step uses
    std::span<const bf16> grads;
    const AdamWParams& adam;
    std::span<bf16> weights_out;
    const std::function<void(const Subgroup&)>& weights_written;
  };
  // The phases of one step of update(): take the subgroup's state from memory, the cache or
  // its reader (nullopt once the run failed), run AdamW on it, then keep it cached or queue its
  // write-back (and the eviction the step causes).
  std::optional<StepState> fetch(const UpdateStep& step, std::size_t pos, PipelineReaders& readers,
                                 UpdateStats& stats);
  void run_adamw(const UpdateStep& step, StepState& state, const StepInputs& in, UpdateStats& stats);
  void put_back(const UpdateStep& step, io::PinnedBuffer lease, PipelineWriters& writers);

  bool fp32_grads() const { return options_.gradients == GradientPolicy::flush_fp32; }
  std::uint64_t buffer_bytes() const;
  io::PinnedBuffer acquire_buffer();
  std::vector<TierIterationStats> tier_snapshot() const;
  // Subgroups of a file tier with CRC on (StateStore::chunk_checked): per chunk, verify, AdamW,
  // record, while the chunk is in cache (streamed ones in their pinned buffer, mapped in place).
  void adamw_checked(const Subgroup& sg, const AdamWParams& adam, float* p, const float* g32, const bf16* g16,
                     bf16* out);
  void record_chunks(const Subgroup& sg, const float* p);
  void verify_chunks(const Subgroup& sg, const float* p) const;

  StateStore& store_;
  io::PinnedBufferPool& pool_;
  std::vector<io::TierSlots*> slots_;
  ThreadPool& threads_;
  PipelineOptions options_;
  WeightDecayMask decay_mask_;
  std::unordered_map<std::int64_t, io::PinnedBuffer> cache_;  // subgroup -> its state
};

}  // namespace mlpo::offload
