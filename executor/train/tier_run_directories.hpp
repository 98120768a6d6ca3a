#pragma once
// TierRunDirectories: the per-process directories of a training run's tier files,
// <tier path>/mlpo/<run>/ (RankEngine puts rank<r>.state there), removed at the end — also
// after an error — and, at start, those of earlier runs on this host whose process is gone
// (killed runs).
//
// Run names are train-<host>-<pid> (default_run_name), so every rank of a job has its own
// directory even when ranks of one node share a tier, and the clean-up only ever judges
// directories of its own host: a pid is only meaningful on the host that made it, and a
// shared remote tier holds the live directories of other nodes' ranks. Names of the older
// form train-<pid> count as this host's.

#include <filesystem>
#include <string>
#include <vector>

#include "core/plan.hpp"

namespace mlpo::train {

// "train-<hostname>-<pid>" of this process.
std::string default_run_name();

class TierRunDirectories {
 public:
  TierRunDirectories(const Plan& plan, const std::string& run);
  ~TierRunDirectories();
  TierRunDirectories(const TierRunDirectories&) = delete;
  TierRunDirectories& operator=(const TierRunDirectories&) = delete;

 private:
  std::vector<std::filesystem::path> dirs_;
};

}  // namespace mlpo::train
