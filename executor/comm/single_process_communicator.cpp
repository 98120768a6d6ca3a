#include "executor/comm/single_process_communicator.hpp"

#include <cstdlib>
#include <cstring>

#include "core/diagnostics.hpp"

namespace mlpo::comm {

SingleProcessCommunicator::SingleProcessCommunicator() : Communicator(RankPlace{}) {}

void SingleProcessCommunicator::abort_job(const std::string& message) {
  write_stderr_line("rank 0: " + message);
  std::exit(2);
}

void SingleProcessCommunicator::do_all_gather(const void* mine, void* all,
                                              std::span<const std::int64_t> counts, ElementType type) {
  if (counts[0] > 0 && mine != all)
    std::memmove(all, mine, static_cast<std::size_t>(counts[0]) * element_bytes(type));
}

void SingleProcessCommunicator::do_reduce_scatter_sum(const void* all, void* mine,
                                                      std::span<const std::int64_t> counts,
                                                      ElementType type) {
  if (counts[0] > 0 && mine != all)
    std::memmove(mine, all, static_cast<std::size_t>(counts[0]) * element_bytes(type));
}

}  // namespace mlpo::comm
