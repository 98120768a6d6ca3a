#include "executor/hf/gathered_safetensors.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "executor/hf/safetensors.hpp"

namespace mlpo::hf {

namespace {
constexpr std::int64_t kPieceElements = std::int64_t{16} << 20;
}

void gather_flat(comm::Communicator& comm, const comm::ZeroPartition& partition, std::size_t element_bytes,
                 const std::function<void(const FlatPieceSink& emit)>& local, const FlatPieceSink& sink) {
  const auto eb = static_cast<std::int64_t>(element_bytes);
  if (comm.rank() == 0) {
    std::int64_t emitted = 0;
    local([&](const std::byte* data, std::int64_t n) {
      sink(data, n);
      emitted += n;
    });
    MLPO_CHECK(emitted == partition.mine().elements, "gather_flat: rank 0 emitted the wrong count");
  }
  std::vector<std::byte> piece;
  for (int r = 1; r < partition.ranks(); ++r) {
    const std::int64_t elements = partition.shard(r).elements;
    auto piece_elements = [&](std::int64_t done) { return std::min(kPieceElements, elements - done); };
    if (comm.rank() == r) {
      // Collect what `local` emits into pieces of exactly the sizes the receivers expect.
      std::int64_t sent = 0, filled = 0;
      piece.resize(static_cast<std::size_t>(piece_elements(0) * eb));
      local([&](const std::byte* data, std::int64_t n) {
        while (n > 0) {
          MLPO_CHECK(sent < elements, "gather_flat: a rank emitted more than its shard");
          const std::int64_t take = std::min(n, piece_elements(sent) - filled);
          std::memcpy(piece.data() + filled * eb, data, static_cast<std::size_t>(take * eb));
          filled += take, data += take * eb, n -= take;
          if (filled == piece_elements(sent)) {
            comm.broadcast(std::span<std::byte>(piece.data(), static_cast<std::size_t>(filled * eb)), r);
            sent += filled;
            filled = 0;
          }
        }
      });
      MLPO_CHECK(sent == elements && filled == 0, "gather_flat: a rank emitted less than its shard");
      continue;
    }
    for (std::int64_t done = 0; done < elements; done += kPieceElements) {
      const std::int64_t n = piece_elements(done);
      piece.resize(static_cast<std::size_t>(n * eb));
      comm.broadcast(std::span<std::byte>(piece), r);
      if (comm.rank() == 0) sink(piece.data(), n);
    }
  }
}

void write_gathered_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                                std::span<const bf16> shard, const model::ParameterLayout& layout,
                                const std::map<std::string, std::string>& metadata, io::SyncedFile* out) {
  MLPO_CHECK(partition.total() == layout.total() &&
                 static_cast<std::int64_t>(shard.size()) == partition.mine().elements,
             "gathered safetensors: shard does not match the partition");
  const bool writer = comm.rank() == 0;
  MLPO_CHECK(!writer || out != nullptr, "rank 0 needs the output file");
  if (writer) {
    const std::string header = safetensors_header(layout, metadata);
    out->write(header.data(), header.size());
  }
  // bf16 little-endian, as x86-64 holds it.
  gather_flat(
      comm, partition, sizeof(bf16),
      [&](const FlatPieceSink& emit) {
        emit(reinterpret_cast<const std::byte*>(shard.data()), static_cast<std::int64_t>(shard.size()));
      },
      [&](const std::byte* data, std::int64_t n) {
        out->write(data, static_cast<std::size_t>(n) * sizeof(bf16));
      });
}

void export_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                        std::span<const bf16> shard, const model::ParameterLayout& layout,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(path);
  const fs::path temp = io::temp_sibling(target);
  std::optional<io::SyncedFile> file;
  if (comm.rank() == 0)
    file.emplace(temp, "check that the --export-safetensors directory has space and is writable");
  write_gathered_safetensors(comm, partition, shard, layout, metadata, file ? &*file : nullptr);
  if (!file) return;
  file->finish();
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error("--export-safetensors " + path + ": cannot rename the finished file into place (" +
                ec.message() + ")");
  }
  io::fsync_directory(target.parent_path());
}

}  // namespace mlpo::hf
