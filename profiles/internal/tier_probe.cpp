#include "profiles/internal/tier_probe.hpp"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <utility>

#include "core/accounting.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/block_device_stats.hpp"
#include "executor/io/capacity.hpp"
#include "executor/io/io_thread_slice.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "executor/io/tier_io.hpp"
#include "executor/io/tier_slots.hpp"
#include "core/thread_pool.hpp"
#include "executor/offload/checked_adamw.hpp"
#include "kernels/cpu/adamw.hpp"
#include "profiles/internal/host_probe.hpp"
#include "core/interrupt.hpp"
#include "profiles/internal/sample_stats.hpp"
#include "core/usable_cores.hpp"

namespace mlpo::profiles {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr std::uint64_t kPage = io::kIoAlign;
constexpr std::uint64_t kStampMagic = 0x4d4c504f50524f46ull;  // "MLPOPROF"
constexpr std::uint64_t kMinRequest = 16 * MiB;
// Bytes of buffers each direction of a stream cycles through (at least two requests' worth).
// The executor reads each subgroup into its own buffer of its pool (8 x 200 MB at 1B
// parameters), never into memory the last transfer just used. How much memory a read lands in
// matters on a VM: the host copies the data into guest memory, and on the dev VM a loop that
// recycles 8 MiB of buffers (fio's iodepth x bs at qd 8) reads the disk at 10-11.5 GB/s, one
// that cycles through 64 MiB or more at 6-6.5 GB/s (docs/benchmarks.md, "Buffer footprint").
constexpr std::uint64_t kBufferSpan = 64 * MiB;

unsigned buffers_per_direction(std::uint64_t request) {
  return static_cast<unsigned>(std::max<std::uint64_t>(2, (kBufferSpan + request - 1) / request));
}

// A block size the engine can use (a whole number of pages) and a queue depth it takes.
bool usable(const IoSetting& io) {
  return io.block_size > 0 && io.block_size % kIoBlockAlign == 0 && io.queue_depth >= 1 &&
         io.queue_depth <= kMaxIoQueueDepth;
}

// Bytes per engine request at one I/O setting (two outstanding per stream).
std::uint64_t request_bytes_at(std::uint64_t block_size, unsigned queue_depth) {
  return round_up(std::max<std::uint64_t>(block_size * queue_depth, kMinRequest), block_size);
}

std::string who(const TierSpec& spec) { return "tier '" + spec.name + "' (" + spec.path.string() + ")"; }

bool on_tmpfs(const fs::path& path) {
  struct statfs sfs {};
  return ::statfs(path.c_str(), &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

// The scratch directory the probe's files live in; removed with its contents on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const TierSpec& spec)
      : path_(spec.path / (".mlpo-profile-" + std::to_string(::getpid()))) {
    std::error_code ec;
    fs::remove_all(path_, ec);  // a leftover of a killed run with the same pid
    if (!fs::create_directory(path_, ec))
      throw Error(who(spec) + ": cannot create the probe directory " + path_.string() + ": " + ec.message());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Every 4 KiB page starts with (magic ^ stream, file offset of the page).
void stamp(std::byte* buffer, std::uint64_t length, unsigned stream, std::uint64_t file_offset) {
  for (std::uint64_t at = 0; at < length; at += kPage) {
    const std::uint64_t words[2] = {kStampMagic ^ stream, file_offset + at};
    std::memcpy(buffer + at, words, sizeof words);
  }
}

// Offset (in the file) of the first page that does not carry its stamp, or UINT64_MAX.
std::uint64_t first_bad_page(const std::byte* buffer, std::uint64_t length, unsigned stream,
                             std::uint64_t file_offset) {
  for (std::uint64_t at = 0; at < length; at += kPage) {
    std::uint64_t words[2];
    std::memcpy(words, buffer + at, sizeof words);
    if (words[0] != (kStampMagic ^ stream) || words[1] != file_offset + at) return file_offset + at;
  }
  return UINT64_MAX;
}

struct Stream {
  std::unique_ptr<io::TierIo> engine;
  io::TierFile* file = nullptr;
  std::vector<io::PinnedBuffer> buffers;  // the pass's requests (the mixed pass: its reads), used in turn
  std::vector<io::PinnedBuffer> write_buffers;  // the mixed pass's writes, used in turn
  Clock::time_point end;
  Clock::time_point write_end;  // the mixed pass: when its writes reached their bytes
  // The mixed pass: bytes moved so far at each completion, per direction.
  std::vector<std::pair<Clock::time_point, std::uint64_t>> read_log, write_log;
  std::exception_ptr error;
};

// Throws an Error naming the file when a page read back at file offset `at` does not carry
// its stamp.
void verify(const Stream& st, const std::byte* buffer, std::uint64_t length, unsigned stream,
            std::uint64_t at) {
  const std::uint64_t bad = first_bad_page(buffer, length, stream, at);
  if (bad != UINT64_MAX)
    throw Error(st.file->path().string() + ": the page at offset " + std::to_string(bad) +
                " read back differs from what the probe wrote there; the tier returns wrong data");
}

// Makes a stream's writes durable: fsync of its file.
void sync(const Stream& st) {
  if (::fsync(st.file->fd()) != 0)
    throw Error(st.file->path().string() + ": fsync failed: " + errno_text(errno));
}

// One request of a pass in flight: where it reads or writes. Each direction of a stream keeps
// two, so its ring never drains between requests.
struct Issued {
  io::IoRequest request;
  std::uint64_t at = UINT64_MAX;  // file offset; UINT64_MAX while nothing is issued here
  std::uint64_t length = 0;
  std::byte* buffer = nullptr;
};

// Issues request number k of stream s's direction `op` at `offset`, into (or, stamped, from)
// the next of `buffers` in turn.
void issue(Stream& st, unsigned s, io::IoOp op, std::vector<io::PinnedBuffer>& buffers, unsigned k,
           std::uint64_t offset, std::uint64_t length, Issued& slot) {
  slot.at = offset;
  slot.length = length;
  slot.buffer = buffers[k % buffers.size()].data();
  if (op == io::IoOp::write) {
    stamp(slot.buffer, length, s, offset);
    slot.request = st.engine->write(*st.file, offset, length, slot.buffer);
  } else {
    slot.request = st.engine->read(*st.file, offset, length, slot.buffer);
  }
}

// After a failure: lets both requests finish (their buffers stay in use until then).
void drain(Issued (&slots)[2]) {
  for (auto& slot : slots) {
    try {
      slot.request.wait();
    } catch (...) {}
  }
}

// One sequential pass (write, or read, checking every page when `check`) of every stream at
// once; returns GB/s over
// all streams, or throws (I/O error, mismatch, interruption) once every stream stopped. A
// write's clock stops when the data has left this host's memory: when the last O_DIRECT
// write completes (the device has it, as the offload engine's writes, which are never
// synced), or after an fsync for a buffered file (its writes would otherwise only be in the
// page cache). O_DIRECT files are fsync'd after the clock, once every stream has stopped, so
// the next pass does not start with this one's writes still being flushed below, and no
// stream's fsync (a device cache flush: on a loop device, a sync of its backing file) stalls
// the streams still writing.
double run_pass(std::vector<Stream>& streams, io::IoOp op, std::uint64_t bytes, std::uint64_t request,
                bool check) {
  std::latch go(1);
  std::vector<std::thread> threads;
  for (unsigned s = 0; s < streams.size(); ++s) {
    threads.emplace_back([&, s] {
      Stream& st = streams[s];
      Issued slots[2];
      // Waits for a slot's request; after a read, checks every page of it.
      auto finish = [&](Issued& slot) {
        slot.request.wait();
        const std::uint64_t at = std::exchange(slot.at, UINT64_MAX);
        if (op != io::IoOp::read || at == UINT64_MAX || !check) return;
        verify(st, slot.buffer, slot.length, s, at);
      };
      try {
        go.wait();
        std::uint64_t offset = 0;
        for (unsigned k = 0; offset < bytes && interrupt_signal() == 0; ++k) {
          Issued& slot = slots[k % 2];
          finish(slot);
          const std::uint64_t len = std::min(request, bytes - offset);
          issue(st, s, op, st.buffers, k, offset, len, slot);
          offset += len;
        }
        finish(slots[0]);
        finish(slots[1]);
        if (op == io::IoOp::write && !st.file->direct()) sync(st);
        st.end = Clock::now();
      } catch (...) {
        drain(slots);
        st.error = std::current_exception();
        st.end = Clock::now();
      }
    });
  }
  const Clock::time_point start = Clock::now();
  go.count_down();
  for (auto& t : threads) t.join();
  for (Stream& st : streams)
    if (st.error) std::rethrow_exception(st.error);
  if (op == io::IoOp::write)
    for (Stream& st : streams)
      if (st.file->direct()) sync(st);
  throw_if_interrupted();
  Clock::time_point last = start;
  for (const Stream& st : streams) last = std::max(last, st.end);
  const double seconds = std::chrono::duration<double>(last - start).count();
  return static_cast<double>(bytes) * static_cast<double>(streams.size()) / seconds / GB;
}

// A mixed pass's outcome: per direction, the GB all streams moved and the seconds they took.
struct MixedPass {
  double read_gb = 0, read_s = 0, write_gb = 0, write_s = 0;
  double read_gbps() const { return read_gb / read_s; }
  double write_gbps() const { return write_gb / write_s; }
};

// What the directions of one mixed pass share: the start, the count of directions that have
// moved their bytes, and whether one failed.
struct MixedPassShared {
  explicit MixedPassShared(unsigned directions) : directions(directions) {}
  std::latch go{1};
  const unsigned directions;
  std::atomic<unsigned> arrived{0};
  std::atomic<bool> failed{false};
};

// One direction (`op`) of stream `s` in a mixed pass: keeps two requests in flight and goes on
// after moving `bytes` until every direction has, logging what it has moved and when. An
// error is stored in `error` and stops the other directions.
void run_mixed_direction(Stream& st, unsigned s, io::IoOp op, std::uint64_t bytes, std::uint64_t request,
                         std::uint64_t block_size, MixedPassShared& shared, std::exception_ptr& error) {
  io::request_short_slice_for_this_thread();  // as the pipeline's reader and writer
  const bool reads = op == io::IoOp::read;
  std::vector<io::PinnedBuffer>& buffers = reads ? st.buffers : st.write_buffers;
  Clock::time_point& end = reads ? st.end : st.write_end;
  auto& log = reads ? st.read_log : st.write_log;
  log.clear();
  Issued slots[2];
  std::uint64_t moved = 0;
  bool reached = false;
  auto finish = [&](Issued& slot) {
    slot.request.wait();
    const std::uint64_t at = std::exchange(slot.at, UINT64_MAX);
    if (at == UINT64_MAX) return;
    if (reads) verify(st, slot.buffer, slot.length, s, at);
    moved += slot.length;
    if (!reached && moved >= bytes) {
      if (!reads && !st.file->direct()) sync(st);  // as in the write pass
      reached = true;
      end = Clock::now();
      log.emplace_back(end, moved);
      shared.arrived.fetch_add(1);
    } else {
      log.emplace_back(Clock::now(), moved);
    }
  };
  try {
    shared.go.wait();
    std::uint64_t offset = reads ? 0 : bytes / 2 / block_size * block_size;
    for (unsigned k = 0;; ++k) {
      Issued& slot = slots[k % 2];
      finish(slot);
      if (interrupt_signal() != 0 || shared.failed.load() ||
          (reached && shared.arrived.load() == shared.directions))
        break;
      const std::uint64_t len = std::min(request, bytes - offset);
      issue(st, s, op, buffers, k, offset, len, slot);
      offset += len;
      if (offset >= bytes) offset = 0;
    }
    finish(slots[0]);
    finish(slots[1]);
    if (!reads && st.file->direct()) sync(st);
  } catch (...) {
    drain(slots);
    shared.failed.store(true);
    error = std::current_exception();
  }
}

// What a direction's log says it had moved by `t`.
std::uint64_t moved_by(const std::vector<std::pair<Clock::time_point, std::uint64_t>>& log,
                       Clock::time_point t) {
  std::uint64_t moved = 0;
  for (const auto& [when, total] : log)
    if (when <= t) moved = total;
  return moved;
}

// The pass's figures from its directions' logs: each side's bytes up to its slowest stream's end.
MixedPass mixed_pass_figures(const std::vector<Stream>& streams, Clock::time_point start) {
  Clock::time_point read_end = start, write_end = start;
  for (const Stream& st : streams) {
    read_end = std::max(read_end, st.end);
    write_end = std::max(write_end, st.write_end);
  }
  MixedPass pass;
  for (const Stream& st : streams) {
    pass.read_gb += static_cast<double>(moved_by(st.read_log, read_end)) / GB;
    pass.write_gb += static_cast<double>(moved_by(st.write_log, write_end)) / GB;
  }
  pass.read_s = std::chrono::duration<double>(read_end - start).count();
  pass.write_s = std::chrono::duration<double>(write_end - start).count();
  return pass;
}

// Reads and writes at once: every stream reads its file from the start (checking each
// page) while writing the same stamps into the file from its middle on — what one rank's
// reader and writer threads do to a tier during the update, on that rank's one engine.
// Each direction keeps two requests outstanding and notes when it has moved `bytes`; a
// direction that gets there first wraps around and keeps going until every direction of
// every stream got there, so both rates are measured with the other direction busy.
// A direction's rate is what all its streams moved until the last of them got there, over
// that time: streams that got there first keep taking their share of the tier meanwhile,
// so counting only `bytes` of each would charge the tier for the streams' unfairness
// (a token bucket serves concurrent streams unevenly; 0.88-0.96 of the cap on the testbed).
// Rewriting a page with its own stamp leaves the file's content unchanged, so reads stay
// checkable whatever they overlap. Writes are timed as in run_pass (fsync inside the clock
// only for buffered files).
MixedPass run_mixed_pass(std::vector<Stream>& streams, std::uint64_t bytes, std::uint64_t request,
                         std::uint64_t block_size) {
  MixedPassShared shared(static_cast<unsigned>(streams.size() * 2));
  std::vector<std::exception_ptr> errors(shared.directions);
  std::vector<std::thread> threads;
  for (unsigned s = 0; s < streams.size(); ++s)
    for (const io::IoOp op : {io::IoOp::read, io::IoOp::write})
      threads.emplace_back(run_mixed_direction, std::ref(streams[s]), s, op, bytes, request, block_size,
                           std::ref(shared), std::ref(errors[2 * s + (op == io::IoOp::read ? 0 : 1)]));
  const Clock::time_point start = Clock::now();
  shared.go.count_down();
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  throw_if_interrupted();
  return mixed_pass_figures(streams, start);
}

// The subgroup the slot handoff probe moves per transfer: the tuner's usual 4 Mi elements,
// whose state (12 bytes an element) a transfer reads or writes.
constexpr std::size_t kHandoffSubgroup = std::size_t{4} << 20;

// A reader and a writer of one stream taking turns on one node-wide slot (TierSlots, k = 1,
// combined), as the update pipeline's reader and writer do under a concurrency limit of 1,
// for `seconds`; each transfer moves one kHandoffSubgroup's state in requests of `request`
// bytes, and `after_read` runs on the reader once a read is done and its slot given back
// (where the pipeline hands the subgroup to AdamW). Between one transfer's completion and the
// next one's submission the tier idles: the I/O thread reaps the completion, the waiting
// thread wakes and gives the slot back, the other thread finds it and submits. Returns that
// idle time per transfer in seconds: the wall time less the transfers' own, over their count.
double probe_slot_handoff(Stream& st, const io::Tier& tier, std::uint64_t bytes, std::uint64_t request,
                          std::uint64_t block, double seconds, const std::function<void()>& after_read) {
  const std::uint64_t transfer =
      std::min<std::uint64_t>(bytes / 2 / block * block, kHandoffSubgroup * kOptimizerStateBytes);
  io::TierSlots slots(tier, 1, SlotScope::combined);
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> transfers{0}, busy_ns{0};
  std::exception_ptr errors[2];
  auto side = [&](io::IoOp op, std::exception_ptr& error) {
    io::request_short_slice_for_this_thread();  // as the pipeline's reader and writer
    const bool reads = op == io::IoOp::read;
    std::vector<io::PinnedBuffer>& buffers = reads ? st.buffers : st.write_buffers;
    std::uint64_t at = reads ? 0 : bytes / 2 / block * block;  // each side in its own half
    Issued issued;
    try {
      for (unsigned k = 0; !stop.load();) {
        io::TierSlot slot = slots.acquire(reads ? io::SlotUse::read : io::SlotUse::write);
        const auto t0 = Clock::now();
        for (std::uint64_t moved = 0; moved < transfer; ++k) {
          const std::uint64_t offset = (at + moved) % bytes;
          issue(st, 0, op, buffers, k, offset, std::min({request, transfer - moved, bytes - offset}), issued);
          issued.request.wait();
          if (reads) verify(st, issued.buffer, issued.length, 0, issued.at);
          moved += issued.length;
        }
        busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
        ++transfers;
        slot.release();
        if (reads && after_read) after_read();
        at = (at + transfer) % bytes;
      }
    } catch (...) {
      stop = true;
      error = std::current_exception();
    }
  };
  const auto t0 = Clock::now();
  std::thread reader(side, io::IoOp::read, std::ref(errors[0]));
  std::thread writer(side, io::IoOp::write, std::ref(errors[1]));
  while (!stop.load() && std::chrono::duration<double>(Clock::now() - t0).count() < seconds)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  reader.join();
  writer.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (transfers.load() == 0) return 0;
  return std::max(0.0, wall - static_cast<double>(busy_ns.load()) * 1e-9) /
         static_cast<double>(transfers.load());
}

// AdamW over a state of its own (16 Mi elements per array) on a ThreadPool of every core, as
// the update pipeline runs it with integrity on (offload::checked_adamw, the function whose
// rate the models scale by the ratio measured here): in subgroups of kSubgroup elements,
// whole passes or bursts of `n` elements (the subgroup whose state a read brought).
class AdamLoad {
 public:
  static constexpr std::size_t kElements = std::size_t{16} << 20;
  static constexpr std::size_t kSubgroup = std::size_t{1} << 20;
  AdamLoad()
      : p_(kElements, 0.01f),
        m_(kElements, 0.0f),
        v_(kElements, 0.0f),
        grad_(kElements, float_to_bf16(1e-3f)),
        out_(kElements),
        pool_(usable_cores()) {
    for (std::size_t s = 0; s < kElements / kSubgroup; ++s)
      integrity_.add_subgroup(static_cast<std::int64_t>(s), static_cast<std::int64_t>(kSubgroup));
  }
  // Elements updated so far (any thread).
  std::int64_t elements() const { return elements_.load(std::memory_order_relaxed); }
  void pass() { burst(kElements); }
  // The next n elements' subgroups (n rounded up to whole subgroups), wrapping around.
  void burst(std::size_t n) {
    for (std::size_t done = 0; done < n; done += kSubgroup) {
      const std::size_t at = next_ * kSubgroup;
      offload::checked_adamw(pool_, integrity_, static_cast<std::int64_t>(next_), no_mask_, 0, params_,
                             p_.data() + at, m_.data() + at, v_.data() + at, nullptr, grad_.data() + at,
                             out_.data() + at, kSubgroup, /*mapped=*/false, "interference probe");
      next_ = (next_ + 1) % (kElements / kSubgroup);
      elements_.fetch_add(static_cast<std::int64_t>(kSubgroup), std::memory_order_relaxed);
    }
    ++params_.step;
  }

 private:
  std::vector<float> p_, m_, v_;
  std::vector<bf16> grad_, out_;
  ThreadPool pool_;
  offload::InPlaceIntegrity integrity_;
  const offload::WeightDecayMask no_mask_;  // every element decays
  AdamWParams params_;
  std::atomic<std::int64_t> elements_{0};
  std::size_t next_ = 0;
};

// Runs AdamLoad::burst(elements) on its own thread once per kick(), as the pipeline's update
// thread runs a subgroup's AdamW when its read is done (kicks while one runs are queued).
class AdamBursts {
 public:
  AdamBursts(AdamLoad& adam, std::size_t elements)
      : elements_(elements), thread_([this, &adam] { loop(adam); }) {}
  ~AdamBursts() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void kick() {
    {
      std::lock_guard lock(mutex_);
      ++pending_;
    }
    wake_.notify_one();
  }
  // Mean seconds of the bursts run so far (0 before the first).
  double mean_burst_s() {
    std::lock_guard lock(mutex_);
    return bursts_ > 0 ? burst_s_ / bursts_ : 0.0;
  }

 private:
  void loop(AdamLoad& adam) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || pending_ > 0; });
        if (stop_) return;
        --pending_;
      }
      const auto t0 = Clock::now();
      adam.burst(elements_);
      const double took = std::chrono::duration<double>(Clock::now() - t0).count();
      std::lock_guard lock(mutex_);
      burst_s_ += took;
      ++bursts_;
    }
  }
  std::size_t elements_;
  double burst_s_ = 0;
  int bursts_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  int pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Mixed passes (a reader and a writer per stream) repeated until they have run `seconds`
// (a small --tier-size makes one pass short): read + write GB/s.
double mixed_gbps_for(std::vector<Stream>& streams, std::uint64_t bytes, std::uint64_t request,
                      std::uint64_t block, double seconds) {
  const auto t0 = Clock::now();
  MixedPass all;
  do {
    throw_if_interrupted();
    const MixedPass pass = run_mixed_pass(streams, bytes, request, block);
    all.read_gb += pass.read_gb;
    all.read_s += pass.read_s;
    all.write_gb += pass.write_gb;
    all.write_s += pass.write_s;
  } while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds);
  return all.read_gbps() + all.write_gbps();
}

// The update's two sides at once, as the pipeline runs them: the tier's mixed read+write and
// AdamW on every core, each against itself alone, in kInterferenceRounds paired rounds
// (alone, then together, a minute's drift falls on both sides of a round), the ratios the
// medians over the rounds; and the slot handoff of a concurrency limit of 1 with the cores
// idle, and how much longer it is when each read's subgroup starts its AdamW as the read is
// done, as a share of that AdamW.
struct UpdateInterference {
  double io_ratio = 0;            // the mixed read+write GB/s while AdamW runs, over alone
  double adam_ratio = 0;          // AdamW's elements/s while the tier streams, over alone
  double handoff_idle_s = 0;      // probe_slot_handoff with the cores idle
  double handoff_waits_adam = 0;  // (handoff with AdamW bursts - idle) / one burst, in [0, 1]
};

constexpr int kInterferenceRounds = 3;
constexpr double kInterferenceSeconds = 0.4;  // each side of each round

UpdateInterference probe_update_interference(std::vector<Stream>& streams, const io::Tier& tier,
                                             std::uint64_t bytes, std::uint64_t request,
                                             std::uint64_t block) {
  constexpr double kHandoffSeconds = 0.5;
  UpdateInterference out;
  out.handoff_idle_s = probe_slot_handoff(streams[0], tier, bytes, request, block, kHandoffSeconds, {});
  AdamLoad adam;
  adam.pass();  // warm: pages touched, threads up, every subgroup recorded
  {
    AdamBursts bursts(adam, kHandoffSubgroup);
    const double handoff =
        probe_slot_handoff(streams[0], tier, bytes, request, block, kHandoffSeconds, [&] { bursts.kick(); });
    if (const double burst = bursts.mean_burst_s(); burst > 0)
      out.handoff_waits_adam = std::clamp((handoff - out.handoff_idle_s) / burst, 0.0, 1.0);
  }
  std::vector<double> io_ratios, adam_ratios;
  for (int round = 0; round < kInterferenceRounds; ++round) {
    const double idle_gbps = mixed_gbps_for(streams, bytes, request, block, kInterferenceSeconds);
    const auto a0 = Clock::now();
    const std::int64_t alone_start = adam.elements();
    while (std::chrono::duration<double>(Clock::now() - a0).count() < kInterferenceSeconds)
      adam.burst(AdamLoad::kSubgroup);
    const double alone_eps = static_cast<double>(adam.elements() - alone_start) /
                             std::chrono::duration<double>(Clock::now() - a0).count();

    // AdamW one subgroup at a time on its own thread, so that its progress over the pass is
    // counted; the thread is stopped and joined on every way out of the block.
    double busy_gbps = 0, busy_eps = 0;
    {
      std::jthread load([&](std::stop_token stop) {
        while (!stop.stop_requested()) adam.burst(AdamLoad::kSubgroup);
      });
      const std::int64_t start = adam.elements();
      const auto t0 = Clock::now();
      busy_gbps = mixed_gbps_for(streams, bytes, request, block, kInterferenceSeconds);
      busy_eps = static_cast<double>(adam.elements() - start) /
                 std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if (idle_gbps > 0 && busy_gbps > 0) io_ratios.push_back(busy_gbps / idle_gbps);
    if (alone_eps > 0 && busy_eps > 0) adam_ratios.push_back(busy_eps / alone_eps);
  }
  if (!io_ratios.empty() && !adam_ratios.empty()) {
    out.io_ratio = summarize(io_ratios, 0).median;
    out.adam_ratio = summarize(adam_ratios, 0).median;
  }
  return out;
}

Measurement probe_latency(Stream& st, std::uint64_t file_bytes, int samples, io::PinnedBuffer& page) {
  std::mt19937_64 rng(42);
  const std::uint64_t pages = std::max<std::uint64_t>(1, file_bytes / kPage);
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) {
    throw_if_interrupted();
    const std::uint64_t offset = (rng() % pages) * kPage;
    const auto t0 = Clock::now();
    st.engine->read(*st.file, offset, kPage, page.data()).wait();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return summarize(std::move(us), static_cast<std::int64_t>(kPage));
}

}  // namespace

TierKind detect_tier_kind(const fs::path& path) {
  struct statfs sfs {};
  if (::statfs(path.c_str(), &sfs) != 0) return TierKind::other;
  switch (static_cast<unsigned long>(sfs.f_type)) {
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
      return TierKind::host;
    case NFS_SUPER_MAGIC:
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x0BD00BD0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x19830326:  // BeeGFS
    case 0x00C36400:  // CephFS
    case 0x65735546:  // FUSE
      return TierKind::remote;
    default:
      break;
  }
  const auto device = io::BlockDeviceStats::of(path);
  if (device && device->name().starts_with("nvme")) return TierKind::nvme;
  return TierKind::other;
}

TierSpec parse_tier_spec(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error("--tier '" + text + "': expected NAME=PATH[:KIND], e.g. --tier nvme=/mnt/nvme:nvme");
  TierSpec spec;
  spec.name = text.substr(0, eq);
  std::string path = text.substr(eq + 1);
  const std::size_t colon = path.rfind(':');
  bool kind_given = false;
  if (colon != std::string::npos) {
    const std::string kind = path.substr(colon + 1);
    if (kind == "host" || kind == "nvme" || kind == "remote" || kind == "other") {
      spec.kind = parse_tier_kind(kind, "--tier " + spec.name);
      path = path.substr(0, colon);
      kind_given = true;
    } else if (kind == "memory") {
      throw Error("--tier '" + text +
                  "': kind 'memory' has no path to measure; use host, nvme, remote or other");
    }
  }
  if (path.empty()) throw Error("--tier '" + text + "': the path is empty; expected NAME=PATH[:KIND]");
  spec.path = path;
  if (!kind_given) spec.kind = detect_tier_kind(spec.path);
  return spec;
}

std::vector<IoSetting> parse_io_settings(const std::string& text) {
  std::vector<IoSetting> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t colon = item.find(':');
    const auto bad = [&](const std::string& why) {
      return Error("--io-settings '" + text + "': '" + item + "' " + why +
                   "; expected BS:QD[,BS:QD...], e.g. 256KiB:32,4MiB:4");
    };
    if (colon == std::string::npos) throw bad("has no ':'");
    IoSetting s;
    try {
      s.block_size = parse_bytes(item.substr(0, colon), "--io-settings block size");
    } catch (const Error& e) {
      throw bad("has a bad block size (" + std::string(e.what()) + ")");
    }
    const std::string qd = item.substr(colon + 1);
    if (qd.empty() || qd.size() > 4 || qd.find_first_not_of("0123456789") != std::string::npos)
      throw bad("has a bad queue depth");
    s.queue_depth = static_cast<unsigned>(std::stoul(qd));
    if (!usable(s)) throw bad("needs a block size that is a multiple of 4 KiB and a queue depth in 1..4096");
    for (const IoSetting& o : out)
      if (o.block_size == s.block_size && o.queue_depth == s.queue_depth) throw bad("is listed twice");
    out.push_back(s);
    at = comma + 1;
  }
  return out;
}

TierProbePlan plan_tier_probe(const TierSpec& spec, const TierProbeOptions& options) {
  std::error_code ec;
  const fs::file_status status = fs::status(spec.path, ec);
  if (!fs::exists(status))
    throw Error(who(spec) + ": the path does not exist; create the directory or pick another --tier path");
  if (!fs::is_directory(status))
    throw Error(who(spec) + ": not a directory; a tier path must be a directory");
  if (::access(spec.path.c_str(), W_OK | X_OK) != 0)
    throw Error(who(spec) + ": not writable (" + errno_text(errno) + "); pick a directory you can write to");
  if (options.block_size == 0 || options.block_size % kPage != 0)
    throw Error("--block-size " + std::to_string(options.block_size) +
                ": must be a positive multiple of 4 KiB");
  if (options.queue_depth == 0) throw Error("--queue-depth must be at least 1");
  for (const IoSetting& io : options.io_settings) {
    if (!usable(io))
      throw Error("--io-settings: block size " + std::to_string(io.block_size) + " x queue depth " +
                  std::to_string(io.queue_depth) +
                  ": a block size must be a positive multiple of 4 KiB and a queue depth in 1..4096");
    if (io == IoSetting{static_cast<std::int64_t>(options.block_size), options.queue_depth})
      throw Error("--io-settings: block size " + format_bytes(static_cast<double>(io.block_size)) +
                  " with queue depth " + std::to_string(io.queue_depth) +
                  " is the main setting (--block-size, --queue-depth); list only the others");
  }
  if (options.max_streams == 0) throw Error("--streams must be at least 1");

  TierProbePlan plan;
  plan.spec = spec;
  struct statvfs vfs {};
  if (::statvfs(spec.path.c_str(), &vfs) != 0)
    throw Error(who(spec) + ": cannot inspect the file system: " + errno_text(errno));
  plan.capacity_bytes = static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  plan.free_bytes = io::free_bytes(spec.path, who(spec));
  for (unsigned n = 1; n < options.max_streams; n *= 2) plan.streams.push_back(n);
  plan.streams.push_back(options.max_streams);
  plan.request_bytes = request_bytes_at(options.block_size, options.queue_depth);

  // Room for every stream's file at the largest point, with 20% of the space left over; on
  // tmpfs the files are memory, so at most half of what is available.
  std::uint64_t room = plan.free_bytes;
  if (on_tmpfs(spec.path)) {
    const auto available = static_cast<std::uint64_t>(read_host_facts().available_bytes);
    room = std::min(room, available / 2);
  }
  const std::uint64_t budget = room / 10 * 8;
  const std::uint64_t wanted =
      round_up(std::max<std::uint64_t>(options.bytes_per_stream, kPage), options.block_size);
  std::uint64_t minimum = 4 * plan.request_bytes;
  for (const IoSetting& io : options.io_settings)
    minimum = std::max(minimum, 4 * request_bytes_at(io.block_size, io.queue_depth));
  // Every setting's files exist at once (the settings take turns within a repetition).
  const std::uint64_t files_per_stream = 1 + options.io_settings.size();
  const std::uint64_t fits =
      budget / options.max_streams / files_per_stream / options.block_size * options.block_size;
  if (fits < minimum) {
    throw Error(who(spec) + ": " + format_bytes(static_cast<double>(plan.free_bytes)) +
                " free, too little for the probe (at least " + std::to_string(options.max_streams) +
                " streams x " + format_bytes(static_cast<double>(minimum)) +
                " with 20% to spare); free space there or lower --streams");
  }
  plan.bytes_per_stream = std::min(wanted, fits);
  if (plan.bytes_per_stream < wanted) {
    plan.clamp_note = who(spec) + ": " + format_bytes(static_cast<double>(plan.free_bytes)) + " free" +
                      (room < plan.free_bytes ? " (tmpfs: capped at half the available memory)" : "") +
                      "; the probe would need " + std::to_string(options.max_streams) + " streams x " +
                      format_bytes(static_cast<double>(wanted)) + ", so each stream writes " +
                      format_bytes(static_cast<double>(plan.bytes_per_stream)) + " instead";
  }
  return plan;
}

namespace {

// One I/O setting's engines and files at one stream count.
struct SettingStreams {
  IoSetting setting;
  io::Tier tier;
  std::uint64_t request = 0;
  std::uint64_t bytes = 0;  // per stream, a whole number of blocks
  std::string label;        // "" for the main setting, else " at 4.0 MiB x qd 4"
  std::vector<Stream> streams;
  std::vector<double> write_gbps, read_gbps, mixed_read_gbps, mixed_write_gbps;
};

// Each stream's buffers while its setting's passes run (the settings take turns, so only one
// setting's buffers are pinned at a time).
void take_buffers(SettingStreams& ss, io::PinnedBufferPool& pool) {
  const unsigned per_direction = buffers_per_direction(ss.request);
  for (Stream& st : ss.streams)
    for (unsigned b = 0; b < per_direction; ++b) {
      st.buffers.push_back(pool.acquire(ss.request));
      st.write_buffers.push_back(pool.acquire(ss.request));
    }
}

void return_buffers(SettingStreams& ss) {
  for (Stream& st : ss.streams) {
    st.buffers.clear();
    st.write_buffers.clear();
  }
}

// The write, read and read+write curves at every I/O setting and stream count of the plan.
// Within each repetition the settings take turns, so the minute-to-minute drift of the
// device (10-20 % on the dev VM) falls on all of them alike rather than on whichever was
// measured last. Then one verifying read pass per setting. `at_one_stream` runs once on the
// main setting's one-stream files (latency and interference), with its buffers taken.
std::vector<TierIoSetting> measure_io_settings(const TierProbePlan& plan, const TierProbeOptions& options,
                                               const std::vector<IoSetting>& settings, const fs::path& dir,
                                               io::PinnedBufferPool& pool, const Diagnostics& diagnostics,
                                               bool& direct,
                                               const std::function<void(SettingStreams&)>& at_one_stream) {
  const TierSpec& spec = plan.spec;
  std::vector<TierIoSetting> out(settings.size());
  for (unsigned n : plan.streams) {
    std::vector<SettingStreams> all(settings.size());
    for (std::size_t i = 0; i < settings.size(); ++i) {
      SettingStreams& ss = all[i];
      ss.setting = settings[i];
      ss.tier.name = spec.name;
      ss.tier.path = dir;
      ss.tier.block_size = ss.setting.block_size;
      ss.tier.queue_depth = ss.setting.queue_depth;
      ss.tier.direct_io = true;
      ss.request = request_bytes_at(ss.setting.block_size, ss.setting.queue_depth);
      ss.bytes = plan.bytes_per_stream / ss.setting.block_size * ss.setting.block_size;
      if (i > 0)
        ss.label = " at " + format_bytes(static_cast<double>(ss.setting.block_size)) + " x qd " +
                   std::to_string(ss.setting.queue_depth);
      ss.streams.resize(n);
      for (unsigned s = 0; s < n; ++s) {
        Stream& st = ss.streams[s];
        st.engine = std::make_unique<io::TierIo>(ss.tier, &pool, diagnostics);
        st.file = &st.engine->open_file("io" + std::to_string(i) + "-stream-" + std::to_string(s) + ".bin",
                                        ss.bytes);
        direct = direct && st.file->direct();
      }
    }
    for (int rep = 1; rep <= options.repetitions; ++rep) {
      for (SettingStreams& ss : all) {
        const std::string at = "tier '" + spec.name + "'" + ss.label + ": " + std::to_string(n) +
                               " stream(s) x " + format_bytes(static_cast<double>(ss.bytes)) + ", rep " +
                               std::to_string(rep) + "/" + std::to_string(options.repetitions);
        take_buffers(ss, pool);
        diagnostics.progress("tier '" + spec.name + "'", at + ", write");
        ss.write_gbps.push_back(run_pass(ss.streams, io::IoOp::write, ss.bytes, ss.request, false));
        diagnostics.progress("tier '" + spec.name + "'", at + ", read");
        ss.read_gbps.push_back(run_pass(ss.streams, io::IoOp::read, ss.bytes, ss.request, false));
        diagnostics.progress("tier '" + spec.name + "'", at + ", read+write");
        const MixedPass pass = run_mixed_pass(ss.streams, ss.bytes, ss.request, ss.setting.block_size);
        ss.mixed_read_gbps.push_back(pass.read_gbps());
        ss.mixed_write_gbps.push_back(pass.write_gbps());
        return_buffers(ss);
      }
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      SettingStreams& ss = all[i];
      const auto pass_bytes = static_cast<std::int64_t>(ss.bytes * n);
      // Every page read back is checked in one more read pass, outside the figures: the
      // executor's reads do not check pages, so the timed read passes do not either (checking
      // every page costs CPU that, on tmpfs, the copies need; docs/profile.md).
      take_buffers(ss, pool);
      diagnostics.progress("tier '" + spec.name + "'", "tier '" + spec.name + "'" + ss.label + ": " +
                                                           std::to_string(n) +
                                                           " stream(s), verifying what was written");
      run_pass(ss.streams, io::IoOp::read, ss.bytes, ss.request, true);
      TierIoSetting& curves = out[i];
      curves.block_size = static_cast<std::int64_t>(ss.setting.block_size);
      curves.queue_depth = static_cast<std::int64_t>(ss.setting.queue_depth);
      const auto n64 = static_cast<std::int64_t>(n);
      curves.write_gbps.push_back({n64, summarize(ss.write_gbps, pass_bytes)});
      curves.read_gbps.push_back({n64, summarize(ss.read_gbps, pass_bytes)});
      curves.mixed_read_gbps.push_back({n64, summarize(ss.mixed_read_gbps, pass_bytes)});
      curves.mixed_write_gbps.push_back({n64, summarize(ss.mixed_write_gbps, pass_bytes)});
      if (i == 0 && n == 1 && at_one_stream) at_one_stream(ss);
      return_buffers(ss);
      for (Stream& st : ss.streams) {
        const fs::path file = st.file->path();
        st.engine->close_file(*st.file);
        std::error_code ec;
        fs::remove(file, ec);
      }
    }
  }
  return out;
}

}  // namespace

TierProfile probe_tier(const TierProbePlan& plan, const TierProbeOptions& options,
                       const Diagnostics& diagnostics) {
  const TierSpec& spec = plan.spec;
  TierProfile out;
  out.name = spec.name;
  out.path = fs::absolute(spec.path).lexically_normal().string();
  out.kind = spec.kind;
  out.capacity_bytes = static_cast<std::int64_t>(plan.capacity_bytes);
  out.free_bytes = static_cast<std::int64_t>(std::min(plan.free_bytes, plan.capacity_bytes));

  const unsigned max_streams = plan.streams.back();
  ScratchDir scratch(spec);  // declared first: removed last, after every engine closed its files
  std::vector<IoSetting> settings{
      {static_cast<std::int64_t>(options.block_size), static_cast<std::int64_t>(options.queue_depth)}};
  settings.insert(settings.end(), options.io_settings.begin(), options.io_settings.end());
  std::uint64_t pool_bytes = 0;  // one setting's buffers at a time
  for (const IoSetting& s : settings) {
    const std::uint64_t request = request_bytes_at(s.block_size, s.queue_depth);
    pool_bytes = std::max(
        pool_bytes, static_cast<std::uint64_t>(max_streams) * 2 * buffers_per_direction(request) * request);
  }
  io::PinnedBufferPool pool(pool_bytes + kPage);

  bool direct = true;
  const std::function<void(SettingStreams&)> latency_and_interference = [&](SettingStreams& main) {
    diagnostics.progress("tier '" + spec.name + "'", "tier '" + spec.name + "': first-byte latency");
    io::PinnedBuffer page = pool.acquire(kPage);
    out.latency_us = probe_latency(main.streams[0], main.bytes, options.latency_samples, page);
    diagnostics.progress("tier '" + spec.name + "'",
                         "tier '" + spec.name + "': read+write while AdamW runs on every core");
    const UpdateInterference u =
        probe_update_interference(main.streams, main.tier, main.bytes, main.request, main.setting.block_size);
    if (u.io_ratio > 0 && u.adam_ratio > 0) {
      out.io_ratio_adam_busy = std::clamp(u.io_ratio, 1e-3, 10.0);
      out.adam_ratio_io_busy = std::clamp(u.adam_ratio, 1e-3, 10.0);
      out.slot_handoff_us = u.handoff_idle_s * 1e6;
      out.slot_handoff_waits_adam = u.handoff_waits_adam;
    }
  };
  std::vector<TierIoSetting> curves = measure_io_settings(plan, options, settings, scratch.path(), pool,
                                                          diagnostics, direct, latency_and_interference);
  out.use_curves(curves[0]);
  out.io_settings.assign(std::make_move_iterator(curves.begin() + 1), std::make_move_iterator(curves.end()));
  out.direct_io = direct;
  return out;
}

}  // namespace mlpo::profiles
