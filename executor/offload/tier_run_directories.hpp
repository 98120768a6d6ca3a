#pragma once
// TierRunDirectories: the per-process directories of a run's tier files,
// <tier path>/mlpo/<run>/ (io::run_directory, executor/io/tier_layout.hpp; RankEngine puts
// rank<r>.state there), removed at the end — also after an error — and, at start, those of
// earlier runs on this host whose process is gone (killed runs). Training
// (train-<host>-<pid>) and mlpo-run --update-only (update-<host>-<pid>, one directory for all
// its forked ranks) both use it, and each clean-up judges the directories of both kinds.
//
// Run names are <kind>-<host>-<pid> (default_run_name), so every rank of a job has its own
// directory even when ranks of one node share a tier, and the clean-up only ever judges
// directories of its own host: a pid is only meaningful on the host that made it, and a
// shared remote tier holds the live directories of other nodes' ranks. Names of the older
// form <kind>-<pid> count as this host's.

#include <filesystem>
#include <string>
#include <vector>

#include "core/plan.hpp"

namespace mlpo::offload {

// "<kind>-<hostname>-<pid>" of this process; `kind` is "train" or "update".
std::string default_run_name(const std::string& kind = "train");

class TierRunDirectories {
 public:
  TierRunDirectories(const Plan& plan, const std::string& run);
  ~TierRunDirectories();
  TierRunDirectories(const TierRunDirectories&) = delete;
  TierRunDirectories& operator=(const TierRunDirectories&) = delete;

 private:
  std::vector<std::filesystem::path> dirs_;
};

}  // namespace mlpo::offload
