#pragma once
// The kinds of storage level a tier can be. `memory` keeps state in the process's own RAM
// (no path); the others are directories: `host` a RAM-backed file system such as /dev/shm,
// `nvme` node-local flash, `remote` a network/parallel file system, `other` anything else.

#include <string>

namespace mlpo {

enum class TierKind { memory, host, nvme, remote, other };

const char* to_string(TierKind kind);

// True for the kinds whose state the update reads and writes in place, with no I/O: `memory`
// (arrays of the process) and `host` (the tier's state file on a RAM-backed file system, mapped
// into the process). The executor's StateStore, the simulator's workload and the tuner's
// memory accounting all decide by this one predicate.
bool updated_in_place(TierKind kind);
// Throws mlpo::Error naming `field` when `text` is not a kind.
TierKind parse_tier_kind(const std::string& text, const std::string& field);

}  // namespace mlpo
