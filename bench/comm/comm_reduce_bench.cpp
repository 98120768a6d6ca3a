// comm_reduce_bench: time of a float reduce-scatter of --elements per rank-set, deterministic
// (MpiCommunicator: all-to-all of blocks + rank-order tree sum) against MPI_Reduce_scatter_block
// (MPI's algorithm and order), median of --reps, and whether the two agree bitwise.
//   mpirun -np 4 build/release/bench/comm/comm_reduce_bench --elements 16777216
// MPI is started by the communicator; the baseline calls MPI on MPI_COMM_WORLD directly.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "executor/comm/open_communicator.hpp"

int main(int argc, char** argv) {
  CLI::App app("deterministic vs MPI reduce-scatter");
  std::int64_t elements = 1 << 24;
  int reps = 5;
  app.add_option("--elements", elements, "floats reduced (whole buffer, per rank)")->capture_default_str();
  app.add_option("--reps", reps, "repetitions (median reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto comm = mlpo::comm::open_communicator(mlpo::comm::launch_env(), mlpo::comm::CommBackend::mpi);
  return mlpo::comm::run_ranked(*comm, [&] {
    const int P = comm->size();
    const std::int64_t per = elements / P;
    std::vector<float> all(static_cast<std::size_t>(per * P)), mine(static_cast<std::size_t>(per)),
        theirs(mine.size());
    for (std::size_t i = 0; i < all.size(); ++i)
      all[i] = static_cast<float>((i * 2654435761u + static_cast<unsigned>(comm->rank())) % 1000) * 1e-3f;
    auto median = [&](auto&& op) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        comm->barrier();
        const auto start = std::chrono::steady_clock::now();
        op();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        comm->all_reduce_max(std::span<double>(&s, 1));
        t.push_back(s);
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    const double ours =
        median([&] { comm->reduce_scatter_sum(std::span<const float>(all), std::span<float>(mine)); });
    const double mpi = median([&] {
      MPI_Reduce_scatter_block(all.data(), theirs.data(), static_cast<int>(per), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
    });
    std::int64_t differ = std::memcmp(mine.data(), theirs.data(), mine.size() * sizeof(float)) != 0;
    comm->all_reduce_sum(std::span<std::int64_t>(&differ, 1));
    if (comm->rank() == 0)
      std::printf(
          "ranks %d  floats %lld  deterministic %.4f s  MPI_Reduce_scatter_block %.4f s  ratio %.2f  ranks "
          "whose bits differ %lld\n",
          P, static_cast<long long>(per * P), ours, mpi, ours / mpi, static_cast<long long>(differ));
    return 0;
  });
}
