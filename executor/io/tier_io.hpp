#pragma once
// TierIo: the I/O engine of one tier. Owns one io_uring and one I/O thread (which alone
// touches the ring), plus the tier's open files. read()/write() may be called from any
// thread: they queue the request and wake the I/O thread through an eventfd, which splits
// the request into block_size operations and keeps at most queue_depth of them per direction
// in the kernel: reads from the oldest read request, writes from the oldest write request,
// taking turns. So a write-back and the next read overlap as two streams, as the profile's
// read+write curve measures a tier and the simulator models it. (One queue for both, oldest
// request first, would run them one after the other and leave a tier with separate read and
// write caps half idle.)
// Tiers never wait on each other: each has its own ring and thread.
//
// Guarantees per request: short transfers are resubmitted for the rest, EINTR/EAGAIN are
// retried, any other failure fails the request with an mlpo::Error naming the tier, file,
// offset and errno text. A read that reaches end of file before `length` bytes is an error
// (a truncated tier file is never read as zeros). With tier.crc, a write records the CRC32C
// of its extent and a later read of the same extent (same offset) verifies it.
//
// O_DIRECT (file.direct()): offset and buffer must be 4 KiB-aligned (mlpo::Error otherwise),
// and the buffer must have round_up(length, 4 KiB) bytes: the tail is padded, i.e. the file
// bytes [offset+length, offset+round_up(length)) belong to this extent. Place extents at
// 4 KiB-aligned offsets. Buffers inside the PinnedBufferPool given at construction use the
// ring's registered fixed buffers.
//
// Cost: one eventfd write per request on the caller's side; per operation one SQE and one
// CQE on the I/O thread; CRC (if on) is computed on the I/O thread per block, for a write
// before the block is submitted and for a read as it completes, so it overlaps the blocks in
// flight; it costs that thread about 1/8 cycle per byte (docs/benchmarks.md, "CRC32C").

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/io/block_device_stats.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/io/internal/io_request.hpp"
#include "executor/io/pinned_buffer_pool.hpp"
#include "core/diagnostics.hpp"
#include "executor/io/tier.hpp"
#include "executor/io/internal/tier_counters.hpp"
#include "executor/io/tier_file.hpp"
#include "executor/io/unique_fd.hpp"

namespace mlpo::io {

class IoRing;

class TierIo {
 public:
  // Starts the tier's I/O thread and ring. `pool` (may be null, must outlive this) is
  // registered as fixed buffers. Throws mlpo::Error on a bad tier or when no ring can be made.
  TierIo(Tier tier, const PinnedBufferPool* pool, Diagnostics diagnostics);
  // Lets every submitted request finish, then stops the thread and closes the files.
  ~TierIo();
  TierIo(const TierIo&) = delete;
  TierIo& operator=(const TierIo&) = delete;

  const Tier& tier() const { return tier_; }

  // Opens (creating, preallocating) tier.path / relative; see TierFile::open. The file is
  // owned by this TierIo and stays valid until close_file() or destruction.
  TierFile& open_file(const std::filesystem::path& relative, std::uint64_t preallocate = 0);
  // Closes a file; every request on it must have finished.
  void close_file(TierFile& file);

  // Reads file bytes [offset, offset+length) into buffer, asynchronously.
  // CrcBy::caller: the caller checks these bytes itself; the engine neither records nor
  // verifies a CRC for the request (a caller write drops the extent's record).
  IoRequest read(TierFile& file, std::uint64_t offset, std::uint64_t length, void* buffer,
                 IoCallback on_done = {}, CrcBy crc_by = CrcBy::engine);
  // Writes buffer [0, length) to file bytes [offset, offset+length), asynchronously.
  IoRequest write(TierFile& file, std::uint64_t offset, std::uint64_t length, const void* buffer,
                  IoCallback on_done = {}, CrcBy crc_by = CrcBy::engine);

  TierCounters& counters() { return counters_; }
  TierCounterSnapshot counter_snapshot() const { return counters_.snapshot(); }
  bool fixed_buffers() const { return fixed_buffers_; }  // pool registered with the ring
  // The block device under the tier's directory (node-wide counters), if it has one.
  const std::optional<BlockDeviceStats>& device() const { return device_; }

 private:
  // One block_size piece of a request while it is in the kernel.
  struct Operation {
    std::shared_ptr<detail::RequestState> request;
    std::uint64_t file_offset = 0;
    std::byte* buffer = nullptr;
    std::uint32_t length = 0;
    std::uint32_t done = 0;  // bytes already transferred (short transfers resume from here)
    int fixed = -1;          // registered buffer index, or -1
  };
  IoRequest submit(IoOp op, TierFile& file, std::uint64_t offset, std::uint64_t length, std::byte* buffer,
                   IoCallback on_done, CrcBy crc_by);
  void run(IoRing& ring);
  void hand_out(IoRing& ring);
  void prepare(IoRing& ring, unsigned index);
  void on_completion(IoRing& ring, unsigned index, int result);
  bool can_hand_out(int direction);
  void hand_out_block(IoRing& ring, int direction);  // one block of the oldest request of `direction`
  void finish_operation(unsigned index);
  void finish_request(detail::RequestState& request);
  void checksum_block(detail::RequestState& request, std::uint64_t start);  // the block at byte `start`
  std::uint32_t extent_crc(const detail::RequestState& request) const;      // the block CRCs joined
  void fail(detail::RequestState& request, const Operation& op, const std::string& what);
  std::string who(const TierFile& file) const;

  const Tier tier_;
  const PinnedBufferPool* pool_;
  Diagnostics diagnostics_;
  TierCounters counters_;
  Crc32cCombiner block_combiner_;  // joins the CRC of one more full block
  UniqueFd wake_fd_;
  bool fixed_buffers_ = false;
  std::optional<BlockDeviceStats> device_;

  std::mutex files_mutex_;
  std::vector<std::unique_ptr<TierFile>> files_;
  std::set<std::string> warned_;  // under files_mutex_: each distinct warning once

  // Submission queue shared with callers.
  std::mutex queue_mutex_;
  std::deque<std::shared_ptr<detail::RequestState>> incoming_;
  bool stopping_ = false;

  // I/O-thread state.
  // Per direction (IoOp::read, IoOp::write): requests not yet fully handed out, operations in flight.
  std::deque<std::shared_ptr<detail::RequestState>> pending_[2];
  unsigned in_flight_of_[2] = {0, 0};
  int next_direction_ = 0;      // the direction hand_out serves first: they take turns
  std::vector<Operation> ops_;  // 2 x queue_depth slots
  std::vector<unsigned> free_ops_;
  unsigned in_flight_ = 0;
  std::uint64_t busy_since_ns_ = 0;
  std::uint64_t wake_value_ = 0;  // target of the eventfd read kept armed in the ring

  std::thread thread_;
};

}  // namespace mlpo::io
