#pragma once
// ScenarioEdit: one change to the machine a plan is tuned for — a measured figure of its
// profile, a tier added or removed, the cluster shape or the remote tiers' backbone — as
// `mlpo-tune --what-if EDIT` reads it and --sensitivity makes it. A Scenario is what an edit
// changes: the profile, the shape and the backbone of a TuneRequest.
//
// Grammar (docs/simulator.md, "What-if"):
//   TARGET=VALUE        sets the figure (a rate: the curve is scaled so its peak is VALUE)
//   TARGET*FACTOR       scales the figure (every point of a curve, and the figures measured
//                       with it: a tier's read rate scales its read, mixed-read and
//                       other-I/O-setting read curves alike)
//   tier+=NAME:like=OTHER[,path=DIR]   adds a copy of tier OTHER named NAME
//   tier-=NAME          removes tier NAME
// Targets (edit_targets() lists them with their units): tier.NAME.{read_gbps, write_gbps,
// gbps, capacity, free, latency_us}; host.{memory, available, memcpy_gbps, adam, compute};
// gpu.{tflops, pcie_gbps, memory}; comm.{host_mpi, nccl, inter_node}.{gbps, latency_us};
// nodes, gpus_per_node, micro_batch, grad_accum, seq_len; remote_backbone_gbps.
// Parsing and applying throw mlpo::Error naming the edit and what would be accepted.

#include <string>
#include <vector>

#include "core/accounting.hpp"
#include "core/profile.hpp"

namespace mlpo::tune {

struct Scenario {
  Profile profile;
  ClusterShape shape;
  double remote_backbone_gbps = 0;  // 0: no cluster-wide limit
};

struct ScenarioEdit {
  enum class Kind { set, scale, add_tier, remove_tier };
  std::string text;  // as given, for messages and reports
  Kind kind = Kind::set;
  std::string target;  // "tier.nvme.read_gbps", "host.memory", "nodes", ...; for tier+=/-= the tier
  double value = 0;    // set: in the target's unit (bytes for sizes); scale: the factor
  std::string like;    // add_tier: the tier copied
  std::string path;    // add_tier: its path (empty: the copied tier's path + "/" + the new name)
};

// One target an edit may name, with its unit and what it changes.
struct EditTarget {
  std::string pattern;  // "tier.NAME.read_gbps"
  std::string unit;     // "GB/s", "bytes (with a unit: 512GiB)", "count", ...
  std::string meaning;
};
const std::vector<EditTarget>& edit_targets();

ScenarioEdit parse_edit(const std::string& text);
// Applies `edit` to `s`. Throws mlpo::Error when the edit names a tier, GPU figure or comm
// path the scenario lacks (listing what it has), or leaves a figure out of range.
void apply(const ScenarioEdit& edit, Scenario& s);
// The value `target` has in `s` now, in the target's unit (the peak of a curve); throws as
// apply does. --sensitivity prints it beside each resource.
double current_value(const Scenario& s, const std::string& target);

}  // namespace mlpo::tune
