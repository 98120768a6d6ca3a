#pragma once
// IoRequest: a handle on one asynchronous range read or write submitted to a TierIo.
// wait() blocks until every byte has been transferred (or the request failed) and rethrows
// the failure as mlpo::Error; after wait() returns the buffer is the caller's again.
// RequestGroup collects handles (e.g. every transfer of one subgroup) and waits for all of
// them. Handles are cheap to copy (shared state); the engine keeps the state alive while
// the request is in flight, so dropping a handle early is allowed (the transfer completes,
// but then nobody sees an error except the callback and the tier's error counter).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlpo::io {

class TierFile;

enum class IoOp { read, write };

// Who checks a request's bytes when the tier has CRC on: the engine (per extent, on the I/O
// thread) or the caller (the update pipeline's per-chunk CRCs fused into AdamW's pass).
enum class CrcBy { engine, caller };

// What the completion callback sees. `error` is empty on success.
struct IoResult {
  IoOp op = IoOp::read;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string error;
};

// Runs on the tier's I/O thread when a request finishes, before wait() returns. Keep it
// short (it delays that tier's other completions) and do not throw.
using IoCallback = std::function<void(const IoResult&)>;

namespace detail {

// Shared between the submitting thread, the tier's I/O thread and every handle. Fields other
// than `done` are written by the I/O thread only, and read by others after `done` is 1.
struct RequestState {
  IoOp op = IoOp::read;
  TierFile* file = nullptr;
  std::uint64_t offset = 0;  // file offset of byte 0
  std::uint64_t length = 0;  // bytes the caller asked for
  std::uint64_t padded = 0;  // bytes transferred: length rounded up to 4 KiB
  std::byte* buffer = nullptr;
  IoCallback callback;
  bool check_crc = false;                 // CRC on, and for a read: the extent has a recorded CRC
  std::vector<std::uint32_t> block_crcs;  // CRC32C of each block_size piece of [0, length), I/O thread

  // I/O-thread bookkeeping.
  std::uint64_t next_chunk = 0;  // bytes of [0, padded) already handed out as operations
  unsigned in_flight = 0;        // operations of this request in the kernel
  std::string error;             // first failure
  bool crc_error = false;

  std::atomic<int> done{0};
};

}  // namespace detail

class IoRequest {
 public:
  IoRequest() = default;  // an empty handle: done, no error
  explicit IoRequest(std::shared_ptr<detail::RequestState> state) : state_(std::move(state)) {}

  // Blocks until the request is finished; throws mlpo::Error if it failed.
  void wait() const;
  // True once finished (successfully or not); never blocks.
  bool done() const;
  // Empty unless finished with a failure.
  std::string error() const;

 private:
  std::shared_ptr<detail::RequestState> state_;
};

class RequestGroup {
 public:
  void add(IoRequest request) { requests_.push_back(std::move(request)); }
  std::size_t size() const { return requests_.size(); }
  // Waits for every request (even after one failed, so no buffer is still in use), then
  // throws the first failure, if any. The group is empty afterwards.
  void wait();

 private:
  std::vector<IoRequest> requests_;
};

}  // namespace mlpo::io
