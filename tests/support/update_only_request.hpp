#pragma once
// A tuner request the tuner tests share: `1b` on one node of two ranks, update only, on the
// I/O-bound sample profile (sample_inputs.hpp) cut to `tiers`, with `host_gib` GiB of host
// memory (at 6 GiB, 1b's 12 GiB of state is mostly streamed: I/O bound on the tiers).

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::testing {

inline tune::TuneRequest update_only_request(const std::vector<std::string>& tiers, std::int64_t host_gib) {
  const Profile all = io_bound_profile();
  tune::TuneRequest r;
  r.model = find_preset("1b");
  r.shape = ClusterShape{1, 2, 1, 0, 1};
  r.profile = all;
  r.profile.host.memory_bytes = r.profile.host.available_bytes = host_gib << 30;
  r.profile.tiers.clear();
  for (const auto& n : tiers) r.profile.tiers.push_back(*all.find_tier(n));
  r.options.update_only = true;
  return r;
}

}  // namespace mlpo::testing
