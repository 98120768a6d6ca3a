#pragma once
// The kinds of storage level a tier can be. `memory` keeps state in the process's own RAM
// (no path); the others are directories: `host` a RAM-backed file system such as /dev/shm,
// `nvme` node-local flash, `remote` a network/parallel file system, `other` anything else.

#include <string>

namespace mlpo {

enum class TierKind { memory, host, nvme, remote, other };

const char* to_string(TierKind kind);
// Throws mlpo::Error naming `field` when `text` is not a kind.
TierKind parse_tier_kind(const std::string& text, const std::string& field);

}  // namespace mlpo
