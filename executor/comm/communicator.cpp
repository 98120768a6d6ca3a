#include "executor/comm/communicator.hpp"

#include <cstdio>
#include <exception>
#include <numeric>

#include "core/accounting.hpp"
#include "core/error.hpp"

namespace mlpo::comm {

std::size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::f32:
      return 4;
    case ElementType::f64:
      return 8;
    case ElementType::bf16:
      return 2;
    case ElementType::i64:
      return 8;
    case ElementType::byte:
      return 1;
  }
  MLPO_CHECK(false, "unknown element type");
}

std::vector<std::int64_t> Communicator::near_equal_counts(std::int64_t count) const {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size()));
  for (int r = 0; r < size(); ++r)
    counts[static_cast<std::size_t>(r)] = count / size() + (r < count % size() ? 1 : 0);
  return counts;
}

std::vector<std::int64_t> Communicator::equal_counts(std::size_t each) const {
  return std::vector<std::int64_t>(static_cast<std::size_t>(size()), static_cast<std::int64_t>(each));
}

void Communicator::check_counts(std::span<const std::int64_t> counts, std::size_t mine,
                                std::size_t all) const {
  MLPO_CHECK(counts.size() == static_cast<std::size_t>(size()),
             std::to_string(counts.size()) + " counts for a world of " + std::to_string(size()));
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  MLPO_CHECK(counts[static_cast<std::size_t>(rank())] == static_cast<std::int64_t>(mine),
             "rank " + std::to_string(rank()) + " piece holds " + std::to_string(mine) +
                 " elements, its count says " + std::to_string(counts[static_cast<std::size_t>(rank())]));
  MLPO_CHECK(
      total == static_cast<std::int64_t>(all),
      "whole buffer holds " + std::to_string(all) + " elements, the counts sum to " + std::to_string(total));
}

void Communicator::check_root(int root) const {
  MLPO_CHECK(root >= 0 && root < size(),
             "broadcast root " + std::to_string(root) + " in a world of " + std::to_string(size()));
}

int run_ranked(Communicator& comm, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    comm.abort_job(e.what());
  } catch (...) {
    comm.abort_job("unknown exception");
  }
  std::
      abort();  // not reached: abort_job ends the process (GCC does not trust [[noreturn]] on a virtual call)
}

namespace {

std::string shape_text(std::int64_t nodes, std::int64_t per_node_min, std::int64_t per_node_max) {
  const std::string per = per_node_min == per_node_max
                              ? std::to_string(per_node_min)
                              : std::to_string(per_node_min) + " to " + std::to_string(per_node_max);
  return std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + " x " + per + " ranks per node";
}

}  // namespace

void check_world_matches(Communicator& comm, const ClusterShape& planned) {
  MLPO_CHECK(comm.memory() == MemorySpace::host, "check_world_matches runs on a host-memory communicator");
  // Ranks per node may differ between nodes: agree on the range so every rank decides alike.
  std::int64_t spread[2] = {comm.local_size(), -static_cast<std::int64_t>(comm.local_size())};
  comm.all_reduce_max(std::span<std::int64_t>(spread));
  const std::int64_t most = spread[0];
  const std::int64_t least = -spread[1];
  if (comm.size() == planned.ranks() && comm.nodes() == planned.nodes && least == planned.ranks_per_node &&
      most == planned.ranks_per_node)
    return;
  throw Error("plan cluster: the plan is for " +
              shape_text(planned.nodes, planned.ranks_per_node, planned.ranks_per_node) + " = " +
              std::to_string(planned.ranks()) + " ranks, but the job was launched as " +
              shape_text(comm.nodes(), least, most) + " = " + std::to_string(comm.size()) +
              " ranks; launch " + std::to_string(planned.ranks()) + " ranks (" +
              std::to_string(planned.ranks_per_node) + " per node on " + std::to_string(planned.nodes) +
              " nodes, e.g. mpirun -np " + std::to_string(planned.ranks()) + " --npernode " +
              std::to_string(planned.ranks_per_node) +
              "), or re-tune for the launched shape with mlpo-tune --nodes " + std::to_string(comm.nodes()) +
              " --gpus-per-node " + std::to_string(most));
}

}  // namespace mlpo::comm
