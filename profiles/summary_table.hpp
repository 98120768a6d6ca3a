#pragma once
// Readable views of a Profile for the terminal: the summary mlpo-profile prints at the end,
// and the old-vs-new comparison of --compare. Every measured figure appears with its spread
// (median [min..max]); the comparison lists every figure present in both profiles with
// new/old.

#include <string>
#include <utility>
#include <vector>

#include "core/profile.hpp"

namespace mlpo::profiles {

std::string summary_table(const Profile& profile);

// Every comparable figure of a profile, as (label, median): "host.memcpy_gbps",
// "tiers[disk].read_gbps@4", "gpus[NVIDIA H200].h2d_gbps", ... in a fixed order.
std::vector<std::pair<std::string, double>> profile_figures(const Profile& profile);

// One line per figure present in both: label, old, new, new/old; then figures only in one.
std::string compare_table(const Profile& old_profile, const Profile& new_profile);

}  // namespace mlpo::profiles
