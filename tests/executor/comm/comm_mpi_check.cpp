// comm_mpi_check: the program the MPI tests launch with mpirun -np P. Each scenario checks
// the communicator against a serial computation every rank does on the same global data,
// prints "rank R: <message>" and exits non-zero (through abort_job) on the first mismatch,
// and rank 0 prints a digest of the reduced results so runs on different P can be compared.
//   collectives   every collective, float/double/bf16/int64, uneven counts
//   zero          ZeRO-3: prefetched layer gathers and gradient reduce-scatters
//   fail          the last rank throws while the others wait in a barrier
//   killed        the last rank is killed by SIGKILL while the others wait in a barrier
//   mismatch      check_world_matches against a plan of 2 nodes x 4 GPUs
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/error.hpp"
#include "executor/comm/layer_exchange.hpp"
#include "executor/comm/open_communicator.hpp"
#include "executor/comm/rank_order_sum.hpp"

namespace {

using namespace mlpo;
using namespace mlpo::comm;

constexpr int kContributions = 4;  // global data: 4 contributions, split over 1, 2 or 4 ranks

// Deterministic values with a wide exponent spread, so the order of additions matters.
float value(std::uint64_t seed, std::int64_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  const double unit = static_cast<double>(x >> 11) / static_cast<double>(1ull << 53) - 0.5;
  return static_cast<float>(unit * std::ldexp(1.0, static_cast<int>(x % 24) - 12));
}

std::vector<float> contribution(int c, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = value(static_cast<std::uint64_t>(c) + 1, i);
  return v;
}

template <class T>
void expect_same_bits(std::span<const T> got, std::span<const T> want, const std::string& what) {
  if (got.size() != want.size() ||
      (!got.empty() && std::memcmp(got.data(), want.data(), got.size_bytes()) != 0)) {
    std::size_t i = 0;
    while (i < got.size() && i < want.size() && std::memcmp(&got[i], &want[i], sizeof(T)) == 0) ++i;
    throw Error(what + ": differs from the serial result at element " + std::to_string(i) + " of " +
                std::to_string(want.size()));
  }
}

std::uint64_t digest(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;  // FNV-1a
  return h;
}

std::vector<std::int64_t> uneven_counts(int ranks, std::int64_t first) {
  std::vector<std::int64_t> counts;
  for (int r = 0; r < ranks; ++r)
    counts.push_back(r == 1 ? 0 : first + 37 * r);  // rank 1 (if any) gives nothing
  return counts;
}

int collectives(Communicator& comm) {
  const int P = comm.size();
  if (kContributions % P != 0) throw Error("collectives: run with 1, 2 or 4 ranks");
  const std::int64_t n = 10007;
  std::vector<std::vector<float>> global;
  for (int c = 0; c < kContributions; ++c) global.push_back(contribution(c, n));
  std::vector<const float*> all_parts;
  for (const auto& g : global) all_parts.push_back(g.data());
  std::vector<float> serial(static_cast<std::size_t>(n));
  tree_sum(std::span<const float* const>(all_parts), std::span<float>(serial));

  // float all-reduce: each rank pre-sums its block of contributions in the same tree.
  const int per = kContributions / P;
  std::vector<float> local(static_cast<std::size_t>(n));
  tree_sum(std::span<const float* const>(all_parts).subspan(static_cast<std::size_t>(comm.rank() * per),
                                                            static_cast<std::size_t>(per)),
           std::span<float>(local));
  std::vector<float> reduced = local;
  comm.all_reduce_sum(std::span<float>(reduced));
  expect_same_bits<float>(reduced, serial, "all_reduce_sum<float> of pre-summed blocks");
  std::uint64_t h = digest(14695981039346656037ull, reduced.data(), reduced.size() * sizeof(float));

  // float reduce-scatter over uneven counts (one rank owns nothing): piece = serial's block.
  const std::vector<std::int64_t> counts = uneven_counts(P, 1500);
  std::int64_t total = 0, offset = 0;
  for (int r = 0; r < P; ++r) {
    if (r < comm.rank()) offset += counts[static_cast<std::size_t>(r)];
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<float> mine(static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]));
  comm.reduce_scatter_sum(std::span<const float>(local).first(static_cast<std::size_t>(total)),
                          std::span<float>(mine), std::span<const std::int64_t>(counts));
  expect_same_bits<float>(
      mine, std::span<const float>(serial).subspan(static_cast<std::size_t>(offset), mine.size()),
      "reduce_scatter_sum<float> uneven");

  // all-gather of those pieces reassembles the serial prefix.
  std::vector<float> gathered(static_cast<std::size_t>(total));
  comm.all_gather(std::span<const float>(mine), std::span<float>(gathered),
                  std::span<const std::int64_t>(counts));
  expect_same_bits<float>(gathered, std::span<const float>(serial).first(gathered.size()),
                          "all_gather<float> uneven");

  // double all-reduce of the pre-summed blocks (in double).
  std::vector<std::vector<double>> global_d;
  for (const auto& g : global) global_d.emplace_back(g.begin(), g.end());
  std::vector<const double*> parts_d;
  for (const auto& g : global_d) parts_d.push_back(g.data());
  std::vector<double> serial_d(static_cast<std::size_t>(n)), local_d(static_cast<std::size_t>(n));
  tree_sum(std::span<const double* const>(parts_d), std::span<double>(serial_d));
  tree_sum(std::span<const double* const>(parts_d).subspan(static_cast<std::size_t>(comm.rank() * per),
                                                           static_cast<std::size_t>(per)),
           std::span<double>(local_d));
  comm.all_reduce_sum(std::span<double>(local_d));
  expect_same_bits<double>(local_d, serial_d, "all_reduce_sum<double>");
  h = digest(h, local_d.data(), local_d.size() * sizeof(double));

  // bf16: one contribution per rank (bf16 partial sums would round), summed in fp32 once.
  std::vector<std::vector<bf16>> grads(static_cast<std::size_t>(P));
  std::vector<const bf16*> grad_parts;
  for (int r = 0; r < P; ++r) {
    for (float x : contribution(r, n)) grads[static_cast<std::size_t>(r)].push_back(float_to_bf16(x));
    grad_parts.push_back(grads[static_cast<std::size_t>(r)].data());
  }
  std::vector<bf16> serial_b(static_cast<std::size_t>(n));
  tree_sum(std::span<const bf16* const>(grad_parts), std::span<bf16>(serial_b));
  std::vector<bf16> mine_b = grads[static_cast<std::size_t>(comm.rank())];
  comm.all_reduce_sum(std::span<bf16>(mine_b));
  expect_same_bits<bf16>(mine_b, serial_b, "all_reduce_sum<bf16>");

  // int64 sum and max; float max.
  std::int64_t ints[3] = {comm.rank() + 1, -comm.rank(), std::int64_t{1} << 40};
  comm.all_reduce_sum(std::span<std::int64_t>(ints));
  const std::int64_t want_ints[3] = {std::int64_t{P} * (P + 1) / 2, -std::int64_t{P} * (P - 1) / 2,
                                     std::int64_t{P} << 40};
  expect_same_bits<std::int64_t>(ints, want_ints, "all_reduce_sum<int64>");
  float seconds[2] = {0.5f * static_cast<float>(comm.rank()), -1.0f - static_cast<float>(comm.rank())};
  comm.all_reduce_max(std::span<float>(seconds));
  const float want_seconds[2] = {0.5f * static_cast<float>(P - 1), -1.0f};
  expect_same_bits<float>(seconds, want_seconds, "all_reduce_max<float>");

  // broadcast from the last rank.
  std::vector<double> message(5, static_cast<double>(comm.rank()));
  comm.broadcast(std::span<double>(message), P - 1);
  const std::vector<double> want_message(5, static_cast<double>(P - 1));
  expect_same_bits<double>(message, want_message, "broadcast<double> from the last rank");
  comm.barrier();
  if (comm.rank() == 0) std::printf("digest %016llx\n", static_cast<unsigned long long>(h));
  return 0;
}

int zero(Communicator& comm) {
  // 3 layers of uneven sizes over a model whose shards are 4096-aligned.
  const std::vector<ParamRange> layers = {{0, 5000}, {5000, 13000}, {13000, 14001}};
  const std::int64_t total = layers.back().end;
  const ZeroPartition partition(total, comm.size(), comm.rank());
  const RankShard& shard = partition.mine();
  std::vector<bf16> weights_global(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i)
    weights_global[static_cast<std::size_t>(i)] = float_to_bf16(value(99, i));
  std::vector<bf16> my_weights(weights_global.begin() + shard.global_begin,
                               weights_global.begin() + shard.global_end());

  LayerExchange exchange(comm, partition);
  std::vector<ParamRange> walk = layers;  // forward, then backward
  walk.insert(walk.end(), layers.rbegin(), layers.rend());
  std::vector<bf16> a(8000), b(8000);
  std::vector<bf16> my_grads(static_cast<std::size_t>(shard.elements));
  std::vector<std::vector<bf16>> layer_grads;
  std::vector<Pending> scatters;
  {
    PrefetchedLayers prefetch(exchange, walk, my_weights, a, b);
    for (std::size_t step = 0; step < walk.size(); ++step) {
      const ParamRange range = walk[step];
      std::span<const bf16> full = prefetch.acquire();
      expect_same_bits<bf16>(
          full,
          std::span<const bf16>(weights_global).subspan(static_cast<std::size_t>(range.begin), full.size()),
          "gathered layer " + std::to_string(step));
      if (step >= layers.size()) {
        // "backward": this rank's gradient of the layer, then reduce-scatter it in the background.
        std::vector<bf16>& g = layer_grads.emplace_back(static_cast<std::size_t>(range.size()));
        for (std::int64_t i = 0; i < range.size(); ++i)
          g[static_cast<std::size_t>(i)] =
              float_to_bf16(value(static_cast<std::uint64_t>(comm.rank()) + 7, range.begin + i));
        scatters.push_back(exchange.reduce_scatter<bf16>(range, g, my_grads));
      }
      prefetch.release();
    }
  }
  for (Pending& p : scatters) p.wait();
  exchange.drain();
  // Serial: every rank's gradient of every element, summed in the rank-order tree.
  std::vector<std::vector<bf16>> all(static_cast<std::size_t>(comm.size()),
                                     std::vector<bf16>(static_cast<std::size_t>(total)));
  std::vector<const bf16*> parts;
  for (int r = 0; r < comm.size(); ++r) {
    for (std::int64_t i = 0; i < total; ++i)
      all[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] =
          float_to_bf16(value(static_cast<std::uint64_t>(r) + 7, i));
    parts.push_back(all[static_cast<std::size_t>(r)].data() + shard.global_begin);
  }
  std::vector<bf16> want(static_cast<std::size_t>(shard.elements));
  tree_sum(std::span<const bf16* const>(parts), std::span<bf16>(want));
  expect_same_bits<bf16>(my_grads, want, "reduce-scattered gradient shard");
  comm.barrier();
  if (comm.rank() == 0)
    std::printf("zero ok: %d ranks, shard of rank 0 = %lld elements\n", comm.size(),
                static_cast<long long>(shard.elements));
  return 0;
}

int fail(Communicator& comm) {
  if (comm.rank() == comm.size() - 1) throw Error("injected failure on the last rank");
  comm.barrier();  // the others wait here for a rank that never comes
  return 0;
}

int killed(Communicator& comm) {
  if (comm.rank() == comm.size() - 1) ::kill(::getpid(), SIGKILL);
  comm.barrier();
  return 0;
}

int mismatch(Communicator& comm) {
  ClusterShape planned;
  planned.nodes = 2;
  planned.ranks_per_node = 4;
  try {
    check_world_matches(comm, planned);
  } catch (const Error& e) {
    std::printf("rank %d: %s\n", comm.rank(), e.what());
    std::fflush(stdout);
    comm.barrier();
    return 0;
  }
  throw Error("check_world_matches accepted a launch of " + std::to_string(comm.size()) +
              " ranks for a plan of 8");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  std::unique_ptr<Communicator> comm;
  try {
    comm = open_communicator(launch_env(), CommBackend::mpi);
  } catch (const Error& e) {
    std::fprintf(stderr, "comm_mpi_check: %s\n", e.what());
    return 2;
  }
  return run_ranked(*comm, [&]() -> int {
    if (scenario == "collectives") return collectives(*comm);
    if (scenario == "zero") return zero(*comm);
    if (scenario == "fail") return fail(*comm);
    if (scenario == "killed") return killed(*comm);
    if (scenario == "mismatch") return mismatch(*comm);
    throw Error("unknown scenario '" + scenario + "'; use collectives, zero, fail, killed or mismatch");
  });
}
