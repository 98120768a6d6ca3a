#include "executor/io/tier_layout.hpp"

#include <string>

namespace mlpo::io {

namespace {
constexpr const char* kRuns = "mlpo";

}  // namespace

std::filesystem::path runs_directory(const std::filesystem::path& tier_path) { return tier_path / kRuns; }

std::filesystem::path run_directory(const std::filesystem::path& tier_path, std::string_view run) {
  return runs_directory(tier_path) / std::string(run);
}

std::filesystem::path run_file_name(std::string_view run, std::string_view file) {
  return std::filesystem::path(kRuns) / std::string(run) / std::string(file);
}

std::filesystem::path state_file_name(std::string_view run, int rank) {
  return run_file_name(run, "rank" + std::to_string(rank) + ".state");
}

std::filesystem::path grad_file_name(std::string_view run, int rank) {
  return run_file_name(run, "rank" + std::to_string(rank) + ".grad");
}

std::filesystem::path slot_directory(const std::filesystem::path& tier_path) {
  return tier_path / ".mlpo-slots";
}

}  // namespace mlpo::io
