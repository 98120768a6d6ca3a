#pragma once
// The full bf16 weights of a data-parallel job, written as one safetensors file by rank 0
// while every rank holds only its ZeRO-3 shard (exports and checkpoints). The file's data
// section is the flat weights in layout order, and shards are contiguous in rank order, so
// rank 0 writes the header, its own shard, then each other rank's shard as it arrives — by
// broadcast from that rank, in pieces of at most 16 Mi elements. Memory: one piece per rank;
// nobody holds the whole model. With one rank this is the plain file, byte for byte the same
// as safetensors_bytes.

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "core/bf16.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/io/synced_file.hpp"

namespace mlpo::hf {

// Hands a piece of flat weights on: `elements` values of the stream's element size.
using FlatPieceSink = std::function<void(const std::byte* data, std::int64_t elements)>;

// Collective. The job's flat weights in global order, handed to `sink` on rank 0 (ignored
// elsewhere): rank 0's shard as its `local` emits it, then each other rank's, broadcast in
// pieces of at most 16 Mi elements of `element_bytes` bytes. `local(emit)` must call emit with
// this rank's partition.mine().elements values, front to back, in pieces of any size (its
// bf16 weights at once, or fp32 master weights subgroup by subgroup). Memory: one piece.
void gather_flat(comm::Communicator& comm, const comm::ZeroPartition& partition, std::size_t element_bytes,
                 const std::function<void(const FlatPieceSink& emit)>& local, const FlatPieceSink& sink);

// Collective. Appends the whole file to `out` on rank 0 (`out` is ignored elsewhere).
// `shard`: this rank's weights, partition.mine().elements of them.
void write_gathered_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                                std::span<const bf16> shard, const model::ParameterLayout& layout,
                                const std::map<std::string, std::string>& metadata, io::SyncedFile* out);

// Collective. Rank 0 writes `path` atomically: a temporary file beside it, fsync'd, renamed,
// the directory fsync'd. Throws mlpo::Error naming the path on an I/O error (on rank 0).
void export_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                        std::span<const bf16> shard, const model::ParameterLayout& layout,
                        const std::map<std::string, std::string>& metadata, const std::string& path);

}  // namespace mlpo::hf
