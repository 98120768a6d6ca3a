#include "executor/io/tier.hpp"

#include "core/error.hpp"

namespace mlpo::io {

void validate(const Tier& tier) {
  const std::string who = "tier '" + tier.name + "' (" + tier.path.string() + "): ";
  if (tier.name.empty())
    throw Error("tier at " + tier.path.string() + " has no name: give every tier a name");
  if (tier.path.empty()) throw Error(who + "empty path: give the tier a directory");
  if (tier.block_size == 0 || tier.block_size % kIoAlign != 0 || tier.block_size > GiB) {
    throw Error(who + "block size " + std::to_string(tier.block_size) +
                " must be a multiple of 4 KiB between 4 KiB and 1 GiB");
  }
  if (tier.queue_depth == 0 || tier.queue_depth > 4096) {
    throw Error(who + "queue depth " + std::to_string(tier.queue_depth) + " must be between 1 and 4096");
  }
}

}  // namespace mlpo::io
