#include "executor/offload/update_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "core/error.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo::offload {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// First error of a pipeline run, shared by all its threads.
class FirstError {
 public:
  void set(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (message_.empty()) message_ = message;
    failed_ = true;
  }
  bool failed() const { return failed_.load(); }
  void rethrow() const {
    std::lock_guard lock(mutex_);
    if (!message_.empty()) throw Error(message_);
  }

 private:
  mutable std::mutex mutex_;
  std::string message_;
  std::atomic<bool> failed_{false};
};

// Runs `fn` on a tier's slot: acquires one (blocking), runs, releases.
template <typename Fn>
void with_slot(io::TierSlots* slots, io::SlotUse use, Fn&& fn) {
  if (!slots) {
    fn();
    return;
  }
  io::TierSlot slot = slots->acquire(use);
  fn();
}

// Joins a pipeline's reader threads on every exit. join(): after the last step, readers
// are done and return on their own. Destroyed without join() (an exception unwinds the
// update): fails the run first so every reader stops waiting, then joins.
class StopOnExit {
 public:
  StopOnExit(FirstError& error, std::condition_variable& cv, std::vector<std::jthread>& threads)
      : error_(error), cv_(cv), threads_(threads) {}
  ~StopOnExit() {
    if (!joined_) {
      error_.set("the update phase was stopped by an error");
      cv_.notify_all();
    }
    join();
  }
  StopOnExit(const StopOnExit&) = delete;
  StopOnExit& operator=(const StopOnExit&) = delete;

  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    joined_ = true;
  }

 private:
  FirstError& error_;
  std::condition_variable& cv_;
  std::vector<std::jthread>& threads_;
  bool joined_ = false;
};

}  // namespace

struct UpdatePipeline::WriteJob {
  std::int64_t subgroup = 0;
  bool gradient = false;  // the fp32 gradient extent, not the state
  io::PinnedBuffer buffer;
};

// One writer thread per file tier, draining a queue. close() waits for every queued write.
class UpdatePipeline::Writers {
 public:
  Writers(UpdatePipeline& owner, FirstError& error)
      : owner_(owner), error_(error), queues_(owner.store_.io_tier_count()) {
    for (std::size_t t = 0; t < queues_.size(); ++t) threads_.emplace_back([this, t] { run(t); });
  }
  ~Writers() { close(); }

  void push(WriteJob job) {
    const auto t = static_cast<std::size_t>(owner_.store_.io_tier(job.subgroup));
    {
      std::lock_guard lock(mutex_);
      if (!job.gradient) pending_.insert(job.subgroup);
      queues_[t].push_back(std::move(job));
    }
    cv_.notify_all();
  }

  // Blocks while a write of this subgroup's state is queued or in flight: a subgroup evicted
  // from the cache early in an iteration may be read again later in the same iteration.
  void wait_written(std::int64_t subgroup) {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return error_.failed() || !pending_.count(subgroup); });
  }

  void close() {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
    }
    cv_.notify_all();
    for (auto& th : threads_) th.join();
  }

  std::int64_t written() const { return written_.load(); }

 private:
  void run(std::size_t t) {
    for (;;) {
      WriteJob job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return closed_ || !queues_[t].empty(); });
        if (queues_[t].empty()) return;
        job = std::move(queues_[t].front());
        queues_[t].pop_front();
      }
      if (!error_.failed()) {
        try {
          with_slot(owner_.slots_[t], io::SlotUse::write, [&] {
            auto req = job.gradient ? owner_.store_.write_grad(job.subgroup, job.buffer.data())
                                    : owner_.store_.write_state(job.subgroup, job.buffer.data());
            req.wait();
          });
          if (!job.gradient) written_++;
        } catch (const std::exception& e) {  // never out of the thread: that would terminate the process
          error_.set(e.what());
        }
      }
      job.buffer.reset();  // back to the pool: readers may be waiting for it
      {
        std::lock_guard lock(mutex_);
        if (!job.gradient) pending_.erase(job.subgroup);
      }
      done_cv_.notify_all();
    }
  }

  UpdatePipeline& owner_;
  FirstError& error_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::unordered_set<std::int64_t> pending_;
  std::vector<std::deque<WriteJob>> queues_;
  std::vector<std::jthread> threads_;
  std::atomic<std::int64_t> written_{0};
  bool closed_ = false;
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
  FirstError error;
  Writers writers(*this, error);
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
    if (store_.checked_in_place(s)) record_in_place(sg, p);
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
  FirstError error;
  Writers writers(*this, error);
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
  const auto& layout = store_.layout();
  const std::int64_t floats = store_.floats_per_array();
  const bool fp32_grads = options_.gradients == GradientPolicy::flush_fp32;
  MLPO_CHECK(static_cast<std::int64_t>(grads.size()) == layout.shard_elements(), "gradient size");
  MLPO_CHECK(weights_out.empty() || weights_out.size() == grads.size(), "weights_out size");
  validate(adam);  // before any thread starts or any state changes (beta1 2, beta2 NaN...)
  const auto before = tier_snapshot();

  UpdateStats stats;
  FirstError error;
  std::mutex mutex;
  std::condition_variable cv;
  std::int64_t adam_pos = 0;  // steps before this one are done
  std::vector<std::optional<io::PinnedBuffer>> ready(steps.size());

  // Readers: one per file tier, over that tier's misses in step order. The prefetch window
  // counts reads, not steps: a reader may start the read of step `pos` while fewer than
  // prefetch_depth reads before it are still to be consumed by Adam, so cache hits and
  // resident subgroups (at the head of an alternating iteration: the whole cache) do not
  // hold the tiers idle.
  std::vector<std::vector<std::size_t>> misses(store_.io_tier_count());
  std::vector<std::int64_t> reads_before(steps.size() + 1, 0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    MLPO_CHECK(steps[i].resident == store_.resident(steps[i].subgroup),
               "step of subgroup " + std::to_string(steps[i].subgroup) +
                   " disagrees with the store on residency "
                   "(plan the iteration with the store's resident() predicate)");
    const bool miss = !steps[i].resident && !steps[i].hit;
    if (miss) misses[static_cast<std::size_t>(store_.io_tier(steps[i].subgroup))].push_back(i);
    reads_before[i + 1] = reads_before[i] + (miss ? 1 : 0);
  }

  Writers writers(*this, error);
  auto reader = [&](std::size_t t) {
    for (std::size_t pos : misses[t]) {
      {
        std::unique_lock lock(mutex);
        // Timed waits: a writer's failure is noticed even though writers do not signal cv.
        while (!cv.wait_for(lock, std::chrono::milliseconds(10), [&] {
          return error.failed() || reads_before[pos] < reads_before[static_cast<std::size_t>(adam_pos)] +
                                                           options_.prefetch_depth;
        })) {}
      }
      if (error.failed()) return;
      std::optional<io::PinnedBuffer> lease;
      try {
        // Buffers come back from writers; wait for one without blocking past an error.
        while (!(lease = pool_.try_acquire(buffer_bytes()))) {
          if (error.failed()) return;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        const std::int64_t s = steps[pos].subgroup;
        writers.wait_written(s);
        if (error.failed()) return;
        with_slot(slots_[t], io::SlotUse::read, [&] {
          io::RequestGroup group;
          group.add(store_.read_state(s, lease->data()));
          if (fp32_grads) group.add(store_.read_grad(s, lease->data() + layout.extent_bytes()));
          group.wait();
        });
      } catch (const std::exception& e) {  // never out of the thread: that would terminate the process
        error.set(e.what());
        cv.notify_all();
        return;
      }
      {
        std::lock_guard lock(mutex);
        ready[pos] = std::move(*lease);
      }
      cv.notify_all();
    }
  };
  std::vector<std::jthread> readers;
  // On any way out of this function, an exception from AdamW or a callback included: stop
  // the readers and join them (a joinable thread destroyed while unwinding terminates the
  // process), then `writers` drains its queue and returns every buffer to the pool.
  StopOnExit stop_readers(error, cv, readers);
  for (std::size_t t = 0; t < misses.size(); ++t)
    if (!misses[t].empty()) readers.emplace_back(reader, t);

  for (std::size_t pos = 0; pos < steps.size() && !error.failed(); ++pos) {
    const UpdateStep& step = steps[pos];
    const Subgroup sg = layout.subgroup(step.subgroup);
    float* p = nullptr;
    const float* g32 = nullptr;
    io::PinnedBuffer lease;
    if (step.resident) {
      p = store_.resident_extent(step.subgroup);
      if (fp32_grads) g32 = store_.resident_grad(step.subgroup);
    } else if (step.hit) {
      auto it = cache_.find(step.subgroup);
      MLPO_CHECK(it != cache_.end(),
                 "cache hit on subgroup " + std::to_string(step.subgroup) + " that is not cached");
      lease = std::move(it->second);
      cache_.erase(it);
      stats.cache_hits++;
    } else {
      const auto wait0 = Clock::now();
      std::unique_lock lock(mutex);
      while (!cv.wait_for(lock, std::chrono::milliseconds(10),
                          [&] { return error.failed() || ready[pos].has_value(); })) {}
      if (error.failed()) break;
      lease = std::move(*ready[pos]);
      ready[pos].reset();
      stats.prefetch_stall_s += seconds_since(wait0);
      stats.reads++;
    }
    if (lease) {
      p = reinterpret_cast<float*>(lease.data());
      if (fp32_grads) g32 = p + 3 * floats;
    }
    const auto adam0 = Clock::now();
    const auto n = static_cast<std::size_t>(sg.elements);
    bf16* out = weights_out.empty() ? nullptr : weights_out.data() + sg.begin;
    if (store_.checked_in_place(step.subgroup))
      adamw_checked_in_place(sg, adam, p, g32, fp32_grads ? nullptr : grads.data() + sg.begin, out);
    else
      adamw_masked(threads_, adam, decay_mask_, sg.begin, n, p, p + floats, p + 2 * floats,
                   grads.data() + sg.begin, fp32_grads ? g32 : nullptr, out);
    stats.adam_s += seconds_since(adam0);
    if (out != nullptr && weights_written) weights_written(sg);
    stats.elements += sg.elements;
    stats.subgroups++;

    if (!step.resident) {
      if (step.stays_cached) {
        cache_.emplace(step.subgroup, std::move(lease));
        if (step.evicted) {
          auto it = cache_.find(*step.evicted);
          MLPO_CHECK(it != cache_.end(), "evicting subgroup that is not cached");
          writers.push(WriteJob{*step.evicted, false, std::move(it->second)});
          cache_.erase(it);
        }
      } else {
        writers.push(WriteJob{step.subgroup, false, std::move(lease)});
      }
    }
    {
      std::lock_guard lock(mutex);
      adam_pos = static_cast<std::int64_t>(pos) + 1;
    }
    cv.notify_all();
  }
  if (error.failed()) cv.notify_all();
  stop_readers.join();
  writers.close();
  error.rethrow();

  stats.writes = writers.written();
  stats.seconds = seconds_since(t0);
  const auto after = tier_snapshot();
  for (std::size_t t = 0; t < after.size(); ++t) {
    TierIterationStats d = after[t];
    d.read_bytes -= before[t].read_bytes;
    d.write_bytes -= before[t].write_bytes;
    d.busy_s -= before[t].busy_s;
    d.slot_wait_s -= before[t].slot_wait_s;
    if (d.device && before[t].device)
      d.device = *d.device - *before[t].device;
    else
      d.device.reset();
    stats.tiers.push_back(d);
  }
  return stats;
}

// One pass per chunk while it is in cache: verify the chunk's CRCs, run AdamW on it, record
// its new CRCs. AdamW is element-wise, so chunk by chunk gives the same bits as one call.
void UpdatePipeline::adamw_checked_in_place(const Subgroup& sg, const AdamWParams& adam, float* p,
                                            const float* g32, const bf16* g16, bf16* out) {
  constexpr auto chunk = static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  float* m = p + floats;
  float* v = p + 2 * floats;
  InPlaceIntegrity& integrity = store_.in_place_integrity();
  const std::string where = store_.where(sg.index);
  threads_.parallel_for(static_cast<std::size_t>(sg.elements), chunk, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; i += chunk) {
      const std::size_t n = std::min(chunk, e - i);
      const auto c = static_cast<std::int64_t>(i / chunk);
      integrity.verify(sg.index, c, p + i, m + i, v + i, n, where);
      // The weight-decay mask's pieces, as adamw_masked() cuts them (element-wise: no bit changes).
      decay_mask_.for_each_piece(sg.begin + static_cast<std::int64_t>(i), static_cast<std::int64_t>(n),
                                 [&](std::int64_t at, std::int64_t count, bool decays) {
                                   AdamWParams a = adam;
                                   if (!decays) a.weight_decay = 0.0f;
                                   const std::size_t j = i + static_cast<std::size_t>(at);
                                   const auto len = static_cast<std::size_t>(count);
                                   bf16* o = out ? out + j : nullptr;
                                   if (g32)
                                     adamw_update_fp32grad(a, p + j, m + j, v + j, g32 + j, o, len);
                                   else
                                     adamw_update_bf16grad(a, p + j, m + j, v + j, g16 + j, o, len);
                                 });
      integrity.record(sg.index, c, p + i, m + i, v + i, n);
    }
  });
  integrity.mark_recorded(sg.index);
}

void UpdatePipeline::record_in_place(const Subgroup& sg, const float* p) {
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  InPlaceIntegrity& integrity = store_.in_place_integrity();
  for (std::int64_t i = 0, c = 0; i < sg.elements; i += InPlaceIntegrity::kChunk, ++c) {
    const auto n = static_cast<std::size_t>(std::min(InPlaceIntegrity::kChunk, sg.elements - i));
    integrity.record(sg.index, c, p + i, p + floats + i, p + 2 * floats + i, n);
  }
  integrity.mark_recorded(sg.index);
}

void UpdatePipeline::verify_in_place(const Subgroup& sg, const float* p) const {
  const std::size_t floats = static_cast<std::size_t>(store_.floats_per_array());
  const std::string where = store_.where(sg.index);
  for (std::int64_t i = 0, c = 0; i < sg.elements; i += InPlaceIntegrity::kChunk, ++c) {
    const auto n = static_cast<std::size_t>(std::min(InPlaceIntegrity::kChunk, sg.elements - i));
    store_.in_place_integrity().verify(sg.index, c, p + i, p + floats + i, p + 2 * floats + i, n, where);
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
      if (store_.checked_in_place(s)) verify_in_place(sg, p);
    } else if (auto it = cache_.find(s); it != cache_.end()) {
      p = reinterpret_cast<const float*>(it->second.data());
    } else {
      lease = acquire_buffer();
      store_.read_state(s, lease.data()).wait();
      p = reinterpret_cast<const float*>(lease.data());
    }
    visit(sg, p, p + floats, p + 2 * floats);
  }
}

}  // namespace mlpo::offload
