#pragma once
// The full bf16 weights of a data-parallel job, written as one safetensors file by rank 0
// while every rank holds only its ZeRO-3 shard (exports and checkpoints). The file's data
// section is the flat weights in layout order, and shards are contiguous in rank order, so
// rank 0 writes the header, its own shard, then each other rank's shard as it arrives — by
// broadcast from that rank, in pieces of at most 16 Mi elements. Memory: one piece per rank;
// nobody holds the whole model. With one rank this is the plain file, byte for byte the same
// as safetensors_bytes.

#include <map>
#include <span>
#include <string>

#include "core/bf16.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/train/synced_file.hpp"

namespace mlpo::train {

// Collective. Appends the whole file to `out` on rank 0 (`out` is ignored elsewhere).
// `shard`: this rank's weights, partition.mine().elements of them.
void write_gathered_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                                std::span<const bf16> shard, const ParameterLayout& layout,
                                const std::map<std::string, std::string>& metadata, SyncedFile* out);

// Collective. Rank 0 writes `path` atomically: a temporary file beside it, fsync'd, renamed,
// the directory fsync'd. Throws mlpo::Error naming the path on an I/O error (on rank 0).
void export_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition, std::span<const bf16> shard,
                        const ParameterLayout& layout, const std::map<std::string, std::string>& metadata,
                        const std::string& path);

}  // namespace mlpo::train
