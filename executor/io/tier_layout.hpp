#pragma once
// TierLayout: the one owner of what MLPO puts under a tier path P (docs/io.md). Every other
// piece builds these paths by calling here, never by joining names itself:
//   P/mlpo/                          the run directories of every run (runs_directory)
//   P/mlpo/<run>/                    one run's files (run_directory, run_file_name); TierRunDirectories
//                                    (executor/offload) removes it at the end of the run
//   P/mlpo/<run>/rank<r>.state       one rank's optimizer state, preallocated (state_file_name)
//   P/mlpo/<run>/rank<r>.grad        its fp32 gradients, baseline mode only (grad_file_name)
//   P/mlpo/bench/                    io_bench's files (removed when it ends)
//   P/.mlpo-slots/<pool>-<i>.lock    the node-wide concurrency slots of the tier (TierSlots)
// P itself must exist; everything below it is created on demand.

#include <filesystem>
#include <string_view>

namespace mlpo::io {

// P/mlpo: holds the run directories.
std::filesystem::path runs_directory(const std::filesystem::path& tier_path);
// P/mlpo/<run>.
std::filesystem::path run_directory(const std::filesystem::path& tier_path, std::string_view run);
// Relative to the tier path (what TierIo::open_file takes): "mlpo/<run>/<file>".
std::filesystem::path run_file_name(std::string_view run, std::string_view file);
// Relative to the tier path: "mlpo/<run>/rank<r>.state".
std::filesystem::path state_file_name(std::string_view run, int rank);
// Relative to the tier path: "mlpo/<run>/rank<r>.grad".
std::filesystem::path grad_file_name(std::string_view run, int rank);
// P/.mlpo-slots.
std::filesystem::path slot_directory(const std::filesystem::path& tier_path);

}  // namespace mlpo::io
