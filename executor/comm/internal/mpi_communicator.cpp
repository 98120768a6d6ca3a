#include "executor/comm/internal/mpi_communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/diagnostics.hpp"
#include "core/error.hpp"
#include "executor/comm/rank_order_sum.hpp"

namespace mlpo::comm {

namespace {

constexpr std::int64_t kMaxMessageBytes = std::int64_t{1} << 30;  // MPI counts are int
constexpr int kDataTag = 17;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(std::string("MPI: ") + what +
              " failed: " + std::string(text, static_cast<std::size_t>(length)) +
              " (a peer rank may have died; see its message above)");
}

// Waits for every request without holding a core. MPI_Waitall spins inside Open MPI until the
// peers' messages arrive; on a node with no core to spare (the CPU backend's compute threads on
// every core, or more ranks than cores) that spinning exchange thread takes up to half of its
// rank's compute time while it waits for a slower peer (docs/comm.md). So: test for up to
// kSpinFor, then sleep between tests, kSleepMin doubling to kSleepMax. Every test drives MPI's
// progress, and a sleep never lasts longer than kSleepMax past a message's arrival.
void wait_all_yielding(std::vector<MPI_Request>& requests) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kSpinFor = std::chrono::microseconds(20);
  constexpr std::chrono::nanoseconds kSleepMin{5'000}, kSleepMax{100'000};
  const auto spin_until = Clock::now() + kSpinFor;
  std::chrono::nanoseconds sleep = kSleepMin;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return;
    if (Clock::now() < spin_until) continue;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(2 * sleep, kSleepMax);
  }
}

// One side of a point-to-point exchange of a contiguous byte range.
struct Transfer {
  std::byte* data;
  std::int64_t bytes;
  int peer;
};

}  // namespace

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;   // our duplicate of MPI_COMM_WORLD
  std::mutex in_use;               // guards the one-thread-at-a-time contract
  std::vector<std::byte> staging;  // reduce-scatter: the peers' blocks
  std::vector<MPI_Request> requests;

  // Posts every receive, then every send (each cut into <= 1 GiB messages, in order: MPI
  // keeps the order of messages between two ranks with one tag), and waits for all.
  void exchange(const std::vector<Transfer>& receives, const std::vector<Transfer>& sends) {
    requests.clear();
    auto post = [&](const Transfer& t, bool send) {
      for (std::int64_t done = 0; done < t.bytes; done += kMaxMessageBytes) {
        const int n = static_cast<int>(std::min(kMaxMessageBytes, t.bytes - done));
        MPI_Request request;
        if (send)
          check_mpi(MPI_Isend(t.data + done, n, MPI_BYTE, t.peer, kDataTag, comm, &request), "MPI_Isend");
        else
          check_mpi(MPI_Irecv(t.data + done, n, MPI_BYTE, t.peer, kDataTag, comm, &request), "MPI_Irecv");
        requests.push_back(request);
      }
    };
    for (const Transfer& t : receives) post(t, false);
    for (const Transfer& t : sends) post(t, true);
    wait_all_yielding(requests);
  }
};

struct MpiCommunicator::Started {
  std::unique_ptr<State> state;
  RankPlace place;
};

namespace {

// Who this rank is, from MPI itself: ranks sharing memory form a node; nodes are numbered by
// their lowest world rank.
RankPlace place_of(MPI_Comm comm) {
  RankPlace place;
  check_mpi(MPI_Comm_rank(comm, &place.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &place.size), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, place.rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  check_mpi(MPI_Comm_rank(local, &place.local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(local, &place.local_size), "MPI_Comm_size");
  MPI_Comm leaders = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm, place.local_rank == 0 ? 0 : MPI_UNDEFINED, place.rank, &leaders),
            "MPI_Comm_split");
  int node_and_count[2] = {0, 0};
  if (leaders != MPI_COMM_NULL) {
    check_mpi(MPI_Comm_rank(leaders, &node_and_count[0]), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(leaders, &node_and_count[1]), "MPI_Comm_size");
    MPI_Comm_free(&leaders);
  }
  check_mpi(MPI_Bcast(node_and_count, 2, MPI_INT, 0, local), "MPI_Bcast");
  MPI_Comm_free(&local);
  place.node = node_and_count[0];
  place.nodes = node_and_count[1];
  return place;
}

}  // namespace

MpiCommunicator::Started MpiCommunicator::start(const LaunchEnv& env) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized)
    throw Error(
        "MPI was already started in this process: open one communicator per process and keep it for the run");
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw Error("MPI: the library gives thread level " + std::to_string(provided) +
                ", MLPO needs MPI_THREAD_SERIALIZED; use Open MPI from scripts/setup.sh");
  }
  auto state = std::make_unique<MpiCommunicator::State>();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &state->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN);
  const RankPlace place = place_of(state->comm);
  if (env.size > 0 && env.size != place.size) {
    const std::string text =
        "launcher environment (" + env.launcher + ") says " + std::to_string(env.size) +
        " ranks but MPI started " + std::to_string(place.size) +
        "; start every rank with the launcher (srun or mpirun inside a batch script), not the script itself";
    MPI_Comm_free(&state->comm);
    MPI_Finalize();
    throw Error(text);
  }
  return {std::move(state), place};
}

MpiCommunicator::MpiCommunicator(const LaunchEnv& env) : MpiCommunicator(start(env)) {}

MpiCommunicator::MpiCommunicator(Started started)
    : Communicator(started.place), state_(std::move(started.state)) {}

MpiCommunicator::~MpiCommunicator() {
  if (state_->comm != MPI_COMM_NULL) MPI_Comm_free(&state_->comm);
  MPI_Finalize();
}

#define MLPO_ONE_CALLER(state)                                               \
  std::unique_lock<std::mutex> one_caller((state).in_use, std::try_to_lock); \
  MLPO_CHECK(one_caller.owns_lock(), "two threads used one communicator at once (see communicator.hpp)")

void MpiCommunicator::barrier() {
  MLPO_ONE_CALLER(*state_);
  check_mpi(MPI_Barrier(state_->comm), "MPI_Barrier");
}

void MpiCommunicator::abort_job(const std::string& message) {
  write_stderr_line("rank " + std::to_string(rank()) + ": " + message);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);  // MPI_Abort does not return; if a broken MPI did, still end this rank
}

void MpiCommunicator::do_all_gather(const void* mine, void* all, std::span<const std::int64_t> counts,
                                    ElementType type) {
  MLPO_ONE_CALLER(*state_);
  const std::int64_t esize = static_cast<std::int64_t>(element_bytes(type));
  auto* out = static_cast<std::byte*>(all);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(size()) + 1, 0);
  for (int q = 0; q < size(); ++q)
    offsets[static_cast<std::size_t>(q) + 1] =
        offsets[static_cast<std::size_t>(q)] + counts[static_cast<std::size_t>(q)] * esize;
  std::byte* my_piece = out + offsets[static_cast<std::size_t>(rank())];
  const std::int64_t my_bytes = counts[static_cast<std::size_t>(rank())] * esize;
  if (my_bytes > 0 && my_piece != mine) std::memmove(my_piece, mine, static_cast<std::size_t>(my_bytes));
  // Sends go out of our piece of `all`, which now holds `mine` (`mine` may be const memory).
  std::vector<Transfer> receives, sends;
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    const std::int64_t bytes = counts[static_cast<std::size_t>(q)] * esize;
    if (bytes > 0) receives.push_back({out + offsets[static_cast<std::size_t>(q)], bytes, q});
    if (my_bytes > 0) sends.push_back({my_piece, my_bytes, q});
  }
  state_->exchange(receives, sends);
}

void MpiCommunicator::do_reduce_scatter_sum(const void* all, void* mine, std::span<const std::int64_t> counts,
                                            ElementType type) {
  MLPO_ONE_CALLER(*state_);
  const std::int64_t esize = static_cast<std::int64_t>(element_bytes(type));
  const auto* in = static_cast<const std::byte*>(all);
  const std::int64_t my_count = counts[static_cast<std::size_t>(rank())];
  const std::int64_t my_bytes = my_count * esize;
  state_->staging.resize(static_cast<std::size_t>(my_bytes * (size() - 1)));
  std::vector<const std::byte*> parts(static_cast<std::size_t>(size()));
  std::vector<Transfer> receives, sends;
  std::int64_t offset = 0;
  for (int q = 0, slot = 0; q < size(); ++q) {
    const std::int64_t bytes = counts[static_cast<std::size_t>(q)] * esize;
    if (q == rank()) {
      parts[static_cast<std::size_t>(q)] = in + offset;
    } else {
      std::byte* block = state_->staging.data() + my_bytes * slot++;
      parts[static_cast<std::size_t>(q)] = block;
      if (my_bytes > 0) receives.push_back({block, my_bytes, q});
      // MPI does not write through a send buffer; the cast only satisfies Isend's old C signature.
      if (bytes > 0) sends.push_back({const_cast<std::byte*>(in + offset), bytes, q});
    }
    offset += bytes;
  }
  state_->exchange(receives, sends);
  const std::size_t n = static_cast<std::size_t>(my_count);
  switch (type) {
    case ElementType::f32:
      tree_sum(std::span(reinterpret_cast<const float* const*>(parts.data()), parts.size()),
               std::span(static_cast<float*>(mine), n));
      break;
    case ElementType::f64:
      tree_sum(std::span(reinterpret_cast<const double* const*>(parts.data()), parts.size()),
               std::span(static_cast<double*>(mine), n));
      break;
    case ElementType::bf16:
      tree_sum(std::span(reinterpret_cast<const bf16* const*>(parts.data()), parts.size()),
               std::span(static_cast<bf16*>(mine), n));
      break;
    case ElementType::i64:
      tree_sum(std::span(reinterpret_cast<const std::int64_t* const*>(parts.data()), parts.size()),
               std::span(static_cast<std::int64_t*>(mine), n));
      break;
    case ElementType::byte:
      MLPO_CHECK(false, "bytes are not summed");
  }
}

void MpiCommunicator::do_all_reduce_sum(void* data, std::int64_t count, ElementType type) {
  // In place: reduce-scatter our block of `data` onto itself (the tree sum reads a tile of
  // every part before writing that tile), then gather every block back.
  const std::vector<std::int64_t> counts = near_equal_counts(count);
  std::int64_t my_offset = 0;
  for (int q = 0; q < rank(); ++q) my_offset += counts[static_cast<std::size_t>(q)];
  auto* bytes = static_cast<std::byte*>(data);
  std::byte* mine = bytes + my_offset * static_cast<std::int64_t>(element_bytes(type));
  do_reduce_scatter_sum(data, mine, counts, type);
  do_all_gather(mine, data, counts, type);
}

void MpiCommunicator::do_all_reduce_max(void* data, std::int64_t count, ElementType type) {
  MLPO_ONE_CALLER(*state_);
  if (type == ElementType::bf16) {
    // bf16 is exactly representable in fp32 and max commutes with the widening.
    auto* values = static_cast<bf16*>(data);
    std::vector<float> wide(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) wide[static_cast<std::size_t>(i)] = bf16_to_float(values[i]);
    for (std::int64_t done = 0; done < count; done += INT_MAX)
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, wide.data() + done,
                              static_cast<int>(std::min<std::int64_t>(INT_MAX, count - done)), MPI_FLOAT,
                              MPI_MAX, state_->comm),
                "MPI_Allreduce");
    for (std::int64_t i = 0; i < count; ++i) values[i] = float_to_bf16(wide[static_cast<std::size_t>(i)]);
    return;
  }
  MPI_Datatype mpi_type = MPI_FLOAT;
  if (type == ElementType::f64) mpi_type = MPI_DOUBLE;
  if (type == ElementType::i64) mpi_type = MPI_INT64_T;
  MLPO_CHECK(type != ElementType::byte, "max is not defined on bytes");
  auto* bytes = static_cast<std::byte*>(data);
  const std::int64_t esize = static_cast<std::int64_t>(element_bytes(type));
  for (std::int64_t done = 0; done < count; done += INT_MAX)
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes + done * esize,
                            static_cast<int>(std::min<std::int64_t>(INT_MAX, count - done)), mpi_type,
                            MPI_MAX, state_->comm),
              "MPI_Allreduce");
}

void MpiCommunicator::do_broadcast(void* data, std::int64_t bytes, int root) {
  MLPO_ONE_CALLER(*state_);
  auto* p = static_cast<std::byte*>(data);
  for (std::int64_t done = 0; done < bytes; done += kMaxMessageBytes)
    check_mpi(MPI_Bcast(p + done, static_cast<int>(std::min(kMaxMessageBytes, bytes - done)), MPI_BYTE, root,
                        state_->comm),
              "MPI_Bcast");
}

}  // namespace mlpo::comm
