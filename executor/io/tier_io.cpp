#include "executor/io/tier_io.hpp"

#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <future>
#include <optional>

#include "core/error.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/io/internal/io_ring.hpp"
#include "executor/io/io_thread_slice.hpp"

namespace mlpo::io {
namespace {

constexpr std::uint64_t kWakeTag = 0;  // user_data of the eventfd read; operations use index + 1

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIX32, v);
  return buf;
}

const char* op_name(IoOp op) { return op == IoOp::read ? "read" : "write"; }

int direction(IoOp op) { return op == IoOp::read ? 0 : 1; }

}  // namespace

TierIo::TierIo(Tier tier, const PinnedBufferPool* pool, Diagnostics diagnostics)
    : tier_(std::move(tier)),
      pool_(pool),
      diagnostics_(std::move(diagnostics)),
      block_combiner_(tier_.block_size) {
  validate(tier_);
  device_ = BlockDeviceStats::of(tier_.path);
  wake_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (!wake_fd_.valid()) {
    const int err = errno;
    throw Error("tier '" + tier_.name + "': cannot create an eventfd: " + errno_text(err));
  }
  ops_.resize(2 * static_cast<std::size_t>(tier_.queue_depth));  // queue_depth per direction
  for (auto i = static_cast<unsigned>(ops_.size()); i-- > 0;) free_ops_.push_back(i);

  // The ring is created on the I/O thread, the only thread that ever touches it.
  std::promise<void> started;
  std::future<void> ready = started.get_future();
  thread_ = std::thread([this, &started] {
    request_short_slice_for_this_thread();  // wakes per completion: ahead of AdamW's threads
    std::optional<IoRing> ring;
    try {
      ring.emplace(2 * tier_.queue_depth + 1, "tier '" + tier_.name + "' (" + tier_.path.string() + ")");
      if (pool_ != nullptr) {
        std::string error;
        fixed_buffers_ = ring->register_buffers(pool_->region(), error);
        if (!fixed_buffers_) {
          diagnostics_.warning("tier '" + tier_.name + "'",
                               "tier '" + tier_.name +
                                   "': cannot register the pinned pool as io_uring fixed buffers (" + error +
                                   "); using plain reads/writes");
        }
      }
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    started.set_value();
    run(*ring);
  });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

TierIo::~TierIo() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
  thread_.join();
}

std::string TierIo::who(const TierFile& file) const {
  return "tier '" + tier_.name + "' (" + file.path().string() + ")";
}

TierFile& TierIo::open_file(const std::filesystem::path& relative, std::uint64_t preallocate) {
  const Diagnostics once([this](const Diagnostic& d) {
    // Called with files_mutex_ held (below).
    if (warned_.insert(d.text).second) diagnostics_.report(d);
  });
  std::lock_guard lock(files_mutex_);
  files_.push_back(TierFile::open(tier_, relative, preallocate, once));
  return *files_.back();
}

void TierIo::close_file(TierFile& file) {
  std::lock_guard lock(files_mutex_);
  auto it = std::find_if(files_.begin(), files_.end(), [&](const auto& f) { return f.get() == &file; });
  MLPO_CHECK(it != files_.end(), "close_file: file does not belong to tier '" + tier_.name + "'");
  files_.erase(it);
}

IoRequest TierIo::read(TierFile& file, std::uint64_t offset, std::uint64_t length, void* buffer,
                       IoCallback on_done, CrcBy crc_by) {
  return submit(IoOp::read, file, offset, length, static_cast<std::byte*>(buffer), std::move(on_done),
                crc_by);
}

IoRequest TierIo::write(TierFile& file, std::uint64_t offset, std::uint64_t length, const void* buffer,
                        IoCallback on_done, CrcBy crc_by) {
  // The engine never writes into a write buffer; the cast only lets both share one state type.
  return submit(IoOp::write, file, offset, length, static_cast<std::byte*>(const_cast<void*>(buffer)),
                std::move(on_done), crc_by);
}

IoRequest TierIo::submit(IoOp op, TierFile& file, std::uint64_t offset, std::uint64_t length,
                         std::byte* buffer, IoCallback on_done, CrcBy crc_by) {
  if (length == 0) return IoRequest();
  if (file.direct() && (offset % kIoAlign != 0 || reinterpret_cast<std::uintptr_t>(buffer) % kIoAlign != 0)) {
    throw Error(who(file) + ": " + op_name(op) + " at offset " + std::to_string(offset) +
                ": O_DIRECT needs 4 KiB-aligned file offsets and buffers; place extents at 4 KiB "
                "boundaries and take buffers from the PinnedBufferPool");
  }
  auto state = std::make_shared<detail::RequestState>();
  state->op = op;
  state->file = &file;
  state->offset = offset;
  state->length = length;
  state->padded = file.direct() ? round_up(length, kIoAlign) : length;
  state->buffer = buffer;
  state->callback = std::move(on_done);
  // CRC32C per block on the I/O thread (writes before their block is submitted, reads as
  // each block completes), so it overlaps the blocks in flight; joined in order at the end.
  state->check_crc =
      tier_.crc && crc_by == CrcBy::engine && (op == IoOp::write || file.recorded_crc(offset).has_value());
  // A record the caller's write makes stale would fail a later engine read of the extent.
  if (tier_.crc && crc_by == CrcBy::caller && op == IoOp::write) file.forget_crc(offset);
  if (state->check_crc) state->block_crcs.resize((length + tier_.block_size - 1) / tier_.block_size);
  {
    std::lock_guard lock(queue_mutex_);
    MLPO_CHECK(!stopping_, "request submitted to tier '" + tier_.name + "' while it shuts down");
    incoming_.push_back(state);
  }
  const std::uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof one) != sizeof one) {
    const int err = errno;
    MLPO_CHECK(false, "eventfd write failed: " + errno_text(err));
  }
  return IoRequest(std::move(state));
}

// ---- I/O thread ----

void TierIo::run(IoRing& ring) {
  auto arm_wake = [&] {
    io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
    MLPO_CHECK(sqe != nullptr, "no SQE for the wake read");
    io_uring_prep_read(sqe, wake_fd_.get(), &wake_value_, sizeof wake_value_, 0);
    io_uring_sqe_set_data64(sqe, kWakeTag);
  };
  arm_wake();
  for (;;) {
    bool stop;
    {
      std::lock_guard lock(queue_mutex_);
      while (!incoming_.empty()) {
        pending_[direction(incoming_.front()->op)].push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
      stop = stopping_;
    }
    hand_out(ring);
    if (stop && pending_[0].empty() && pending_[1].empty() && in_flight_ == 0) break;

    const int rc = io_uring_submit_and_wait(ring.get(), 1);
    MLPO_CHECK(rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY,
               "io_uring_enter failed on tier '" + tier_.name + "': " + errno_text(-rc));

    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring.get(), head, cqe) {
      ++seen;
      const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
      if (tag == kWakeTag) {
        arm_wake();
      } else {
        on_completion(ring, static_cast<unsigned>(tag - 1), cqe->res);
      }
    }
    io_uring_cq_advance(ring.get(), seen);
  }
}

// Whether direction `d` has a block to hand out and room for it (drops requests fully handed out).
bool TierIo::can_hand_out(int d) {
  auto& pending = pending_[d];
  while (!pending.empty() && pending.front()->next_chunk >= pending.front()->padded) pending.pop_front();
  return !pending.empty() && in_flight_of_[d] < tier_.queue_depth;
}

void TierIo::hand_out(IoRing& ring) {
  for (;;) {
    int d = next_direction_;
    if (!can_hand_out(d)) d = 1 - d;
    if (!can_hand_out(d)) return;
    next_direction_ = 1 - d;
    hand_out_block(ring, d);
  }
}

void TierIo::hand_out_block(IoRing& ring, int d) {
  auto& pending = pending_[d];
  detail::RequestState& req = *pending.front();
  const unsigned index = free_ops_.back();
  free_ops_.pop_back();
  Operation& op = ops_[index];
  const std::uint64_t len = std::min<std::uint64_t>(tier_.block_size, req.padded - req.next_chunk);
  op.request = pending.front();
  op.file_offset = req.offset + req.next_chunk;
  op.buffer = req.buffer + req.next_chunk;
  op.length = static_cast<std::uint32_t>(len);
  op.done = 0;
  op.fixed = ring.fixed_index(op.buffer, len);
  const std::uint64_t start = req.next_chunk;
  req.next_chunk += len;
  ++req.in_flight;
  ++in_flight_of_[d];
  if (in_flight_++ == 0) busy_since_ns_ = now_ns();
  const bool checksum = req.check_crc && req.op == IoOp::write;
  if (checksum) checksum_block(req, start);
  prepare(ring, index);
  // Let the device start on this block while the next one is checksummed.
  if (checksum) io_uring_submit(ring.get());
}

void TierIo::checksum_block(detail::RequestState& req, std::uint64_t start) {
  if (start >= req.length) return;  // only 4 KiB tail padding: not part of the extent
  const std::uint64_t bytes = std::min<std::uint64_t>(tier_.block_size, req.length - start);
  req.block_crcs[start / tier_.block_size] = crc32c(req.buffer + start, bytes);
}

std::uint32_t TierIo::extent_crc(const detail::RequestState& req) const {
  std::uint32_t crc = req.block_crcs.empty() ? 0 : req.block_crcs[0];
  for (std::size_t i = 1; i < req.block_crcs.size(); ++i) {
    const std::uint64_t bytes = std::min<std::uint64_t>(tier_.block_size, req.length - i * tier_.block_size);
    crc = bytes == tier_.block_size ? block_combiner_.combine(crc, req.block_crcs[i])
                                    : crc32c_combine(crc, req.block_crcs[i], bytes);
  }
  return crc;
}

void TierIo::prepare(IoRing& ring, unsigned index) {
  Operation& op = ops_[index];
  io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
  if (sqe == nullptr) {  // cannot happen with 2 x queue_depth + 1 entries, but be safe
    io_uring_submit(ring.get());
    sqe = io_uring_get_sqe(ring.get());
    MLPO_CHECK(sqe != nullptr, "io_uring submission queue full");
  }
  const int fd = op.request->file->fd();
  std::byte* buf = op.buffer + op.done;
  const unsigned len = op.length - op.done;
  const std::uint64_t off = op.file_offset + op.done;
  if (op.request->op == IoOp::read) {
    if (op.fixed >= 0) {
      io_uring_prep_read_fixed(sqe, fd, buf, len, off, op.fixed);
    } else {
      io_uring_prep_read(sqe, fd, buf, len, off);
    }
  } else {
    if (op.fixed >= 0) {
      io_uring_prep_write_fixed(sqe, fd, buf, len, off, op.fixed);
    } else {
      io_uring_prep_write(sqe, fd, buf, len, off);
    }
  }
  // Buffered reads (tmpfs, page cache) would otherwise be copied inline, one after the other,
  // by this thread; IOSQE_ASYNC hands each to io_uring's worker pool so up to queue_depth
  // copies run in parallel. Buffered writes are not: writes to one file are serialised by
  // the inode lock (and io-wq hashes them to a single worker), so a worker hand-off buys no
  // parallelism, only hand-off cost — measured on tmpfs at bs 1 MiB qd 32: 0.87-0.89x fio
  // with it, 1.1-1.3x without (docs/benchmarks.md). O_DIRECT operations go to the device
  // without it.
  if (!op.request->file->direct() && op.request->op == IoOp::read) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
  io_uring_sqe_set_data64(sqe, index + 1);
}

void TierIo::fail(detail::RequestState& request, const Operation& op, const std::string& what) {
  if (request.error.empty()) {
    request.error = who(*request.file) + ": " + op_name(request.op) + " of " +
                    std::to_string(op.length - op.done) + " bytes at offset " +
                    std::to_string(op.file_offset + op.done) + " " + what;
  }
  request.next_chunk = request.padded;  // hand out nothing more of it
}

void TierIo::on_completion(IoRing& ring, unsigned index, int result) {
  Operation& op = ops_[index];
  detail::RequestState& req = *op.request;
  const bool is_read = req.op == IoOp::read;

  if (result == -EINTR || result == -EAGAIN) {
    counters_.add_retry();
    prepare(ring, index);
    return;
  }
  if (result < 0) {
    fail(req, op, "failed: " + errno_text(-result));
    finish_operation(index);
    return;
  }
  op.done += static_cast<std::uint32_t>(result);
  counters_.add_bytes(is_read, static_cast<std::uint64_t>(result));
  if (op.done < op.length) {
    if (!is_read && result == 0) {
      fail(req, op, "failed: the file system accepted no bytes");
      finish_operation(index);
      return;
    }
    if (is_read) {
      // A short read: either end of file (truncated file, or only the 4 KiB tail padding is
      // missing, which is fine) or the kernel stopped early (resubmit the rest).
      const std::uint64_t position = op.file_offset + op.done;
      const std::uint64_t needed_end = req.offset + req.length;
      bool at_end = result == 0;
      if (!at_end) {
        try {
          at_end = req.file->size() <= position;
        } catch (const Error& e) {
          fail(req, op, std::string("failed: ") + e.what());
          finish_operation(index);
          return;
        }
      }
      if (at_end) {
        if (position < needed_end) {
          fail(
              req, op,
              "hits end of file at byte " + std::to_string(position) + " (needed up to byte " +
                  std::to_string(needed_end) +
                  "): the tier file is truncated; it was changed outside MLPO, restore it from a checkpoint");
        }
        finish_operation(index);
        return;
      }
    }
    counters_.add_retry();
    prepare(ring, index);
    return;
  }
  finish_operation(index);
}

void TierIo::finish_operation(unsigned index) {
  Operation& op = ops_[index];
  if (op.request->check_crc && op.request->op == IoOp::read && op.request->error.empty())
    checksum_block(*op.request, op.file_offset - op.request->offset);
  std::shared_ptr<detail::RequestState> request = std::move(op.request);
  op.request.reset();
  free_ops_.push_back(index);
  --in_flight_of_[direction(request->op)];
  if (--in_flight_ == 0) counters_.add_busy_ns(now_ns() - busy_since_ns_);
  if (--request->in_flight == 0 && request->next_chunk >= request->padded) finish_request(*request);
}

void TierIo::finish_request(detail::RequestState& req) {
  const bool is_read = req.op == IoOp::read;
  if (req.error.empty() && req.check_crc) {
    if (!is_read) {
      req.file->record_crc(req.offset, ExtentCrc{req.length, extent_crc(req)});
    } else if (auto stored = req.file->recorded_crc(req.offset)) {
      const std::uint32_t actual = extent_crc(req);
      if (stored->length != req.length) {
        req.error = who(*req.file) + ": read of " + std::to_string(req.length) + " bytes at offset " +
                    std::to_string(req.offset) + " does not match the extent written there (" +
                    std::to_string(stored->length) +
                    " bytes), so its CRC32C cannot be checked; read whole extents";
      } else if (actual != stored->crc) {
        req.error = who(*req.file) + ": CRC32C mismatch in the extent at offset " +
                    std::to_string(req.offset) + " (" + std::to_string(req.length) + " bytes): written " +
                    hex32(stored->crc) + ", read " + hex32(actual) +
                    "; the tier file is corrupted or torn, restore it from a checkpoint";
        req.crc_error = true;
      }
    }
  }
  if (req.error.empty()) {
    counters_.add_request(is_read);
  } else {
    counters_.add_error(req.crc_error);
  }
  if (req.callback) {
    IoResult result{req.op, req.offset, req.length, req.error};
    try {
      req.callback(result);
    } catch (const std::exception& e) {
      MLPO_CHECK(false, std::string("an I/O completion callback threw: ") + e.what());
    }
  }
  req.done.store(1, std::memory_order_release);
  req.done.notify_all();
}

}  // namespace mlpo::io
