#include "executor/offload/update_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/error.hpp"
#include "executor/offload/checked_adamw.hpp"
#include "executor/offload/internal/pipeline_error.hpp"
#include "executor/offload/internal/pipeline_readers.hpp"
#include "executor/offload/internal/pipeline_writers.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo::offload {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What each file tier did between two snapshots; the device's span only when both have one.
std::vector<TierIterationStats> tier_deltas(const std::vector<TierIterationStats>& before,
                                            std::vector<TierIterationStats> after) {
  for (std::size_t t = 0; t < after.size(); ++t) {
    TierIterationStats& d = after[t];
    d.read_bytes -= before[t].read_bytes;
    d.write_bytes -= before[t].write_bytes;
    d.busy_s -= before[t].busy_s;
    d.slot_wait_s -= before[t].slot_wait_s;
    if (d.device && before[t].device)
      d.device = *d.device - *before[t].device;
    else
      d.device.reset();
  }
  return after;
}

}  // namespace

// Where one step's (p, m, v) and fp32 gradient are, and the lease that holds them (none for a
// resident subgroup).
struct UpdatePipeline::StepState {
  float* p = nullptr;
  const float* g32 = nullptr;
  io::PinnedBuffer lease;
};

std::uint64_t pipeline_pool_bytes(const SubgroupLayout& layout, const PipelineOptions& o) {
  const std::uint64_t per = static_cast<std::uint64_t>(
      layout.extent_bytes() + (o.gradients == GradientPolicy::flush_fp32 ? layout.array_bytes() : 0));
  // The cache never holds more than every subgroup of the shard.
  return per * static_cast<std::uint64_t>(o.buffers + std::min(o.cache_subgroups, layout.count()));
}

UpdatePipeline::UpdatePipeline(StateStore& store, io::PinnedBufferPool& pool,
                               std::vector<io::TierSlots*> slots, ThreadPool& threads,
                               PipelineOptions options)
    : store_(store), pool_(pool), slots_(std::move(slots)), threads_(threads), options_(options) {
  MLPO_CHECK(slots_.size() == store_.io_tier_count(), "one TierSlots entry per file tier");
  if (options_.buffers < 2) throw Error("buffers: the update pipeline needs at least 2 pinned buffers");
  if (options_.prefetch_depth < 1 || options_.prefetch_depth > options_.buffers)
    throw Error("prefetch_depth: must be between 1 and buffers (" + std::to_string(options_.buffers) + ")");
  if (pool_.budget() < pipeline_pool_bytes(store_.layout(), options_))
    throw Error("pinned buffer pool of " + std::to_string(pool_.budget()) + " bytes is smaller than the " +
                std::to_string(pipeline_pool_bytes(store_.layout(), options_)) +
                " bytes that (buffers + host cache) subgroup buffers need");
}

UpdatePipeline::~UpdatePipeline() = default;

std::uint64_t UpdatePipeline::buffer_bytes() const {
  return static_cast<std::uint64_t>(
      store_.layout().extent_bytes() +
      (options_.gradients == GradientPolicy::flush_fp32 ? store_.layout().array_bytes() : 0));
}

io::PinnedBuffer UpdatePipeline::acquire_buffer() { return pool_.acquire(buffer_bytes()); }

std::vector<TierIterationStats> UpdatePipeline::tier_snapshot() const {
  std::vector<TierIterationStats> out;
  for (std::size_t t = 0; t < store_.io_tier_count(); ++t) {
    const io::TierIo& tier = store_.tiers()[t];
    auto s = tier.counter_snapshot();
    out.push_back(TierIterationStats{tier.tier().name, s.bytes_read, s.bytes_written, s.busy_s, s.slot_wait_s,
                                     std::nullopt});
    if (tier.device()) out.back().device = tier.device()->snapshot();  // nullopt if unreadable now
  }
  return out;
}

void UpdatePipeline::initialize(const std::function<float(std::int64_t)>& init) {
  load_state([&](const Subgroup& sg, float* p, float*, float*) {
    for (std::int64_t i = 0; i < sg.elements; ++i) p[i] = init(sg.begin + i);
  });
}

void UpdatePipeline::load_state(const std::function<void(const Subgroup&, float*, float*, float*)>& fill) {
  MLPO_CHECK(cache_.empty(), "load_state needs an empty cache");
  const auto& layout = store_.layout();
  const std::int64_t floats = store_.floats_per_array();
  PipelineError error;
  PipelineWriters writers(store_, slots_, error);
  for (std::int64_t s = 0; s < layout.count(); ++s) {
    const Subgroup sg = layout.subgroup(s);
    io::PinnedBuffer lease;
    float* p;
    if (store_.resident(s)) {
      p = store_.resident_extent(s);
    } else {
      lease = acquire_buffer();
      p = reinterpret_cast<float*>(lease.data());
    }
    // Zero first: the padding of each array is written too, so tier files are deterministic.
    std::memset(p, 0, static_cast<std::size_t>(3 * floats) * sizeof(float));
    fill(sg, p, p + floats, p + 2 * floats);
    if (store_.chunk_checked(s)) record_chunks(sg, p);
    if (lease) writers.push(WriteJob{s, false, std::move(lease)});
    if (error.failed()) break;
  }
  writers.close();
  error.rethrow();
}

double UpdatePipeline::flush_gradients(std::span<const bf16> grads) {
  const auto t0 = Clock::now();
  const auto& layout = store_.layout();
  MLPO_CHECK(options_.gradients == GradientPolicy::flush_fp32, "flush_gradients needs the flush-fp32 policy");
  MLPO_CHECK(static_cast<std::int64_t>(grads.size()) == layout.shard_elements(), "gradient size");
  PipelineError error;
  PipelineWriters writers(store_, slots_, error);
  for (std::int64_t s = 0; s < layout.count() && !error.failed(); ++s) {
    const Subgroup sg = layout.subgroup(s);
    const auto n = static_cast<std::size_t>(sg.elements);
    if (store_.resident(s)) {
      bf16_to_fp32(grads.data() + sg.begin, store_.resident_grad(s), n);
      continue;
    }
    io::PinnedBuffer lease = acquire_buffer();
    float* g = reinterpret_cast<float*>(lease.data());
    bf16_to_fp32(grads.data() + sg.begin, g, n);
    std::memset(g + n, 0, static_cast<std::size_t>(layout.array_bytes()) - n * sizeof(float));
    writers.push(WriteJob{s, true, std::move(lease)});
  }
  writers.close();
  error.rethrow();
  return seconds_since(t0);
}

UpdateStats UpdatePipeline::update(const std::vector<UpdateStep>& steps, std::span<const bf16> grads,
                                   const AdamWParams& adam, std::span<bf16> weights_out,
                                   const std::function<void(const Subgroup&)>& weights_written) {
  const auto t0 = Clock::now();
  MLPO_CHECK(static_cast<std::int64_t>(grads.size()) == store_.layout().shard_elements(), "gradient size");
  MLPO_CHECK(weights_out.empty() || weights_out.size() == grads.size(), "weights_out size");
  validate(adam);  // before any thread starts or any state changes (beta1 2, beta2 NaN...)
  const auto before = tier_snapshot();
  const StepInputs in{grads, adam, weights_out, weights_written};

  UpdateStats stats;
  PipelineError error;
  PipelineWriters writers(store_, slots_, error);
  // On any way out of this function, an exception from AdamW or a callback included, `readers`
  // stops and joins its threads, then `writers` drains its queue and returns every buffer.
  PipelineReaders readers(store_, pool_, slots_, steps,
                          ReadOptions{buffer_bytes(), options_.prefetch_depth, fp32_grads()}, writers, error);
  for (std::size_t pos = 0; pos < steps.size() && !error.failed(); ++pos) {
    std::optional<StepState> state = fetch(steps[pos], pos, readers, stats);
    if (!state) break;  // the run failed
    run_adamw(steps[pos], *state, in, stats);
    put_back(steps[pos], std::move(state->lease), writers);
  }
  readers.join();
  writers.close();
  error.rethrow();

  stats.writes = writers.written();
  stats.seconds = seconds_since(t0);
  stats.tiers = tier_deltas(before, tier_snapshot());
  return stats;
}

std::optional<UpdatePipeline::StepState> UpdatePipeline::fetch(const UpdateStep& step, std::size_t pos,
                                                               PipelineReaders& readers, UpdateStats& stats) {
  StepState state;
  if (step.resident) {
    state.p = store_.resident_extent(step.subgroup);
    if (fp32_grads()) state.g32 = store_.resident_grad(step.subgroup);
    return state;
  }
  if (step.hit) {
    auto it = cache_.find(step.subgroup);
    MLPO_CHECK(it != cache_.end(),
               "cache hit on subgroup " + std::to_string(step.subgroup) + " that is not cached");
    state.lease = std::move(it->second);
    cache_.erase(it);
    stats.cache_hits++;
  } else {
    const auto wait0 = Clock::now();
    std::optional<io::PinnedBuffer> read = readers.take(pos);
    if (!read) return std::nullopt;
    state.lease = std::move(*read);
    stats.prefetch_stall_s += seconds_since(wait0);
    stats.reads++;
  }
  state.p = reinterpret_cast<float*>(state.lease.data());
  if (fp32_grads()) state.g32 = state.p + 3 * store_.floats_per_array();
  return state;
}

void UpdatePipeline::run_adamw(const UpdateStep& step, StepState& state, const StepInputs& in,
                               UpdateStats& stats) {
  const Subgroup sg = store_.layout().subgroup(step.subgroup);
  const std::int64_t floats = store_.floats_per_array();
  float* p = state.p;
  const auto adam0 = Clock::now();
  const auto n = static_cast<std::size_t>(sg.elements);
  bf16* out = in.weights_out.empty() ? nullptr : in.weights_out.data() + sg.begin;
  if (store_.chunk_checked(step.subgroup))
    adamw_checked(sg, in.adam, p, state.g32, fp32_grads() ? nullptr : in.grads.data() + sg.begin, out);
  else
    adamw_masked(threads_, in.adam, decay_mask_, sg.begin, n, p, p + floats, p + 2 * floats,
                 in.grads.data() + sg.begin, fp32_grads() ? state.g32 : nullptr, out);
  stats.adam_s += seconds_since(adam0);
  if (out != nullptr && in.weights_written) in.weights_written(sg);
  stats.elements += sg.elements;
  stats.subgroups++;
}

void UpdatePipeline::put_back(const UpdateStep& step, io::PinnedBuffer lease, PipelineWriters& writers) {
  if (step.resident) return;
  if (!step.stays_cached) {
    writers.push(WriteJob{step.subgroup, false, std::move(lease)});
    return;
  }
  cache_.emplace(step.subgroup, std::move(lease));
  if (step.evicted) {
    auto it = cache_.find(*step.evicted);
    MLPO_CHECK(it != cache_.end(), "evicting subgroup that is not cached");
    writers.push(WriteJob{*step.evicted, false, std::move(it->second)});
    cache_.erase(it);
  }
}

// Verify, AdamW and record per chunk in one pass (checked_adamw.hpp): a streamed subgroup in
// its pinned buffer, between its read and its write; a mapped one in place.
void UpdatePipeline::adamw_checked(const Subgroup& sg, const AdamWParams& adam, float* p, const float* g32,
                                   const bf16* g16, bf16* out) {
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  checked_adamw(threads_, store_.chunk_integrity(), sg.index, decay_mask_, sg.begin, adam, p, p + floats,
                p + 2 * floats, g32, g16, out, static_cast<std::size_t>(sg.elements),
                store_.resident(sg.index), store_.where(sg.index));
}

void UpdatePipeline::record_chunks(const Subgroup& sg, const float* p) {
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  InPlaceIntegrity& integrity = store_.chunk_integrity();
  for (std::int64_t i = 0, c = 0; i < sg.elements; i += InPlaceIntegrity::kChunk, ++c) {
    const auto n = static_cast<std::size_t>(std::min(InPlaceIntegrity::kChunk, sg.elements - i));
    integrity.record(sg.index, c, p + i, p + floats + i, p + 2 * floats + i, n);
  }
  integrity.mark_recorded(sg.index);
}

void UpdatePipeline::verify_chunks(const Subgroup& sg, const float* p) const {
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  const std::string where = store_.where(sg.index);
  for (std::int64_t i = 0, c = 0; i < sg.elements; i += InPlaceIntegrity::kChunk, ++c) {
    const auto n = static_cast<std::size_t>(std::min(InPlaceIntegrity::kChunk, sg.elements - i));
    store_.chunk_integrity().verify(sg.index, c, p + i, p + floats + i, p + 2 * floats + i, n, where);
  }
}

void UpdatePipeline::visit_state(
    const std::function<void(const Subgroup&, const float*, const float*, const float*)>& visit) {
  const auto& layout = store_.layout();
  const std::int64_t floats = store_.floats_per_array();
  for (std::int64_t s = 0; s < layout.count(); ++s) {
    const Subgroup sg = layout.subgroup(s);
    const float* p = nullptr;
    io::PinnedBuffer lease;
    if (store_.resident(s)) {
      p = store_.resident_extent(s);
      if (store_.chunk_checked(s)) verify_chunks(sg, p);
    } else if (auto it = cache_.find(s); it != cache_.end()) {
      p = reinterpret_cast<const float*>(it->second.data());
    } else {
      lease = acquire_buffer();
      store_.read_state(s, lease.data()).wait();
      p = reinterpret_cast<const float*>(lease.data());
      if (store_.chunk_checked(s)) verify_chunks(sg, p);
    }
    visit(sg, p, p + floats, p + 2 * floats);
  }
}

}  // namespace mlpo::offload
