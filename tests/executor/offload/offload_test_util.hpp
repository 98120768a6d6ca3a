#pragma once
// Scratch tier directories for offload tests: one on the disk under the system temp dir,
// one on /dev/shm (tmpfs), both removed at the end.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/plan.hpp"

namespace mlpo::offload::testing {

class ScratchTiers {
 public:
  explicit ScratchTiers(const std::string& tag) {
    const std::string name = "mlpo-" + tag + "-" + std::to_string(::getpid());
    disk_ = std::filesystem::temp_directory_path() / name;
    shm_ = std::filesystem::path("/dev/shm") / name;
    std::filesystem::create_directories(disk_);
    std::filesystem::create_directories(shm_);
  }
  ~ScratchTiers() {
    std::error_code ec;
    std::filesystem::remove_all(disk_, ec);
    std::filesystem::remove_all(shm_, ec);
  }
  std::string disk() const { return disk_.string(); }
  std::string shm() const { return shm_.string(); }

  // A plan over (disk, shm) with the given split; limit applies to the disk tier. The shm
  // tier is kind `host` (mapped, updated in place) unless `shm_kind` says otherwise (`other`:
  // streamed through the I/O engine like any file tier).
  Plan plan(double disk_fraction, std::int64_t cache, OrderPolicy order, std::int64_t limit = 0,
            std::int64_t subgroup = 16384, TierKind shm_kind = TierKind::host) const {
    Plan p;
    p.model_name = "synthetic";
    p.model_params = 1;
    p.subgroup_elements = subgroup;
    p.tiers.push_back(PlanTier{"disk", disk(), TierKind::nvme, disk_fraction, limit});
    if (disk_fraction < 1.0) p.tiers.push_back(PlanTier{"shm", shm(), shm_kind, 1.0 - disk_fraction, 0});
    p.host_cache_subgroups = cache;
    p.order = order;
    p.buffers = 4;
    p.prefetch_depth = 2;
    validate(p);
    return p;
  }

 private:
  std::filesystem::path disk_, shm_;
};

}  // namespace mlpo::offload::testing
