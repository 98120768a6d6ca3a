#include "executor/train/gathered_safetensors.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "executor/train/safetensors.hpp"

namespace mlpo::train {

namespace {
constexpr std::int64_t kPieceElements = std::int64_t{16} << 20;
}

void write_gathered_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition,
                                std::span<const bf16> shard, const ParameterLayout& layout,
                                const std::map<std::string, std::string>& metadata, SyncedFile* out) {
  MLPO_CHECK(partition.total() == layout.total() && static_cast<std::int64_t>(shard.size()) == partition.mine().elements,
             "gathered safetensors: shard does not match the partition");
  const bool writer = comm.rank() == 0;
  MLPO_CHECK(!writer || out != nullptr, "rank 0 needs the output file");
  if (writer) {
    const std::string header = safetensors_header(layout, metadata);
    out->write(header.data(), header.size());
    out->write(shard.data(), shard.size_bytes());  // bf16 little-endian, as x86-64 holds it
  }
  std::vector<bf16> piece;
  for (int r = 1; r < partition.ranks(); ++r) {
    const std::int64_t elements = partition.shard(r).elements;
    for (std::int64_t done = 0; done < elements; done += kPieceElements) {
      const std::int64_t n = std::min(kPieceElements, elements - done);
      piece.resize(static_cast<std::size_t>(n));
      if (comm.rank() == r) std::copy_n(shard.begin() + done, n, piece.begin());
      comm.broadcast(std::span<bf16>(piece), r);
      if (writer) out->write(piece.data(), piece.size() * sizeof(bf16));
    }
  }
}

void export_safetensors(comm::Communicator& comm, const comm::ZeroPartition& partition, std::span<const bf16> shard,
                        const ParameterLayout& layout, const std::map<std::string, std::string>& metadata,
                        const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(path);
  std::string temp_name = ".";  // built step by step: GCC 12 warns (-Wrestrict) on the one-line concatenation
  temp_name += target.filename().string();
  temp_name += ".tmp.";
  temp_name += std::to_string(::getpid());
  const fs::path temp = target.parent_path() / temp_name;
  std::optional<SyncedFile> file;
  if (comm.rank() == 0) file.emplace(temp, "check that the --export-safetensors directory has space and is writable");
  write_gathered_safetensors(comm, partition, shard, layout, metadata, file ? &*file : nullptr);
  if (!file) return;
  file->finish();
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error("--export-safetensors " + path + ": cannot rename the finished file into place (" + ec.message() + ")");
  }
  fsync_directory(target.parent_path());
}

}  // namespace mlpo::train
