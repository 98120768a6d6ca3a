#include "executor/checkpoint/checkpoint_directory.hpp"

#include <algorithm>
#include <fstream>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/io/capacity.hpp"

namespace mlpo::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "ckpt-";

constexpr const char* kRemoving = ".removing";

// ckpt-<step>.tmp (being written) or ckpt-<step>.removing (being removed).
bool is_unfinished_name(const std::string& name) {
  for (const std::string suffix : {".tmp", kRemoving})
    if (name.size() > suffix.size() && name.ends_with(suffix) &&
        checkpoint_step(name.substr(0, name.size() - suffix.size())))
      return true;
  return false;
}

// Bytes of the files under `dir`, 0 when it is gone.
std::uint64_t tree_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

}  // namespace

std::string checkpoint_name(std::int64_t step) { return kPrefix + std::to_string(step); }

std::optional<std::int64_t> checkpoint_step(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return std::nullopt;
  for (std::size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return std::stoll(name.substr(5));
}

std::optional<fs::path> newest_checkpoint(const fs::path& dir) {
  const std::vector<std::int64_t> complete = complete_checkpoints(dir);
  if (complete.empty()) return std::nullopt;
  return dir / checkpoint_name(complete.front());
}

std::vector<std::int64_t> complete_checkpoints(const fs::path& dir) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (const auto step = checkpoint_step(e.path().filename().string()); step && e.is_directory(ec))
      steps.push_back(*step);
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::optional<std::string> read_latest(const fs::path& dir) {
  const fs::path latest = dir / "latest";
  std::error_code ec;
  if (!fs::exists(latest, ec)) return std::nullopt;
  std::string name;
  std::ifstream in(latest);
  if (!in || !std::getline(in, name))
    throw Error(latest.string() +
                ": unreadable; restore it, or remove it to resume from the newest complete checkpoint");
  if (!checkpoint_step(name))
    throw Error(
        latest.string() + ": does not name a checkpoint ('" + name +
        "'); the checkpoint directory is damaged: remove it to resume from the newest complete checkpoint");
  return name;
}

void expect_no_checkpoints(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "latest" || name.rfind(kPrefix, 0) == 0) found.push_back(name);
  }
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  std::string list;
  for (std::size_t i = 0; i < found.size() && i < 4; ++i) list += (i ? ", " : "") + found[i];
  if (found.size() > 4) list += ", ...";
  throw Error("--checkpoint-dir " + dir.string() + ": already holds checkpoints of a run (" + list +
              "); pass --resume to continue it, or choose another directory");
}

void remove_unfinished_checkpoints(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_unfinished_name(e.path().filename().string())) fs::remove_all(e.path(), ec);
}

void discard_checkpoint(const fs::path& checkpoint) {
  std::error_code ec;
  if (!fs::exists(checkpoint, ec)) return;
  fs::path removing = checkpoint;
  removing += kRemoving;
  fs::remove_all(removing, ec);
  fs::rename(checkpoint, removing, ec);
  fs::remove_all(ec ? checkpoint : removing, ec);
}

void remove_superseded_checkpoints(const fs::path& dir, std::int64_t step) {
  std::error_code ec;
  std::vector<fs::path> old;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto other = checkpoint_step(name);
    if (other && *other < step) old.push_back(e.path());
    if (name.rfind(".latest.tmp.", 0) == 0)
      fs::remove(e.path(), ec);  // write_file_atomic's temp, of a killed run
  }
  for (const auto& path : old) discard_checkpoint(path);
}

std::uint64_t checkpoint_bytes(std::int64_t params, std::int64_t tensors, int ranks) {
  const auto n = static_cast<std::uint64_t>(params);
  const std::uint64_t header = 256 * static_cast<std::uint64_t>(tensors) + 4096;  // safetensors JSON header
  const std::uint64_t manifest = 4096 + 512 * static_cast<std::uint64_t>(ranks);
  return n * 2 + header + n * 3 * 4 + manifest;
}

void check_checkpoint_space(const fs::path& dir, std::uint64_t bytes) {
  fs::path existing = fs::absolute(dir);
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  std::uint64_t free = io::free_bytes(existing, "--checkpoint-dir " + dir.string());
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_unfinished_name(e.path().filename().string())) free += tree_bytes(e.path());
  if (free >= bytes) return;
  throw Error("--checkpoint-dir " + dir.string() + ": a checkpoint needs " +
              format_bytes(static_cast<double>(bytes)) +
              " (14 B per parameter: bf16 weights, fp32 p, m, v) but its file system (" + existing.string() +
              ") has " + format_bytes(static_cast<double>(free)) +
              " free; free space there, or choose a --checkpoint-dir on a file system with room for one more "
              "checkpoint");
}

}  // namespace mlpo::checkpoint
