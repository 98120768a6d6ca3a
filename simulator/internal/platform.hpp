#pragma once
// Platform: the simulated cluster, built with SimGrid S4U in one place from a plan's Rates.
// Internal to the simulator (only its .cpp files include SimGrid).
//
// Per node:
//   node<n>.cpu        one host for the node's CPU-Adam; its speed is the Adam curve in
//                      elements/s, shared non-linearly (n ranks at once get adam(n x threads))
//   node<n>.gpu<g>     one host per rank's GPU (bf16 FLOP/s), with PCIe links h2d / d2h to cpu
//   node<n>.cpu-compute  without GPUs: the CPU backend's GEMM host, shared by the node's ranks
//                      — slowed by the smallest adam_ratio of the node's tiers moving bytes
//                      at the time (NodeActivity; the update_interference of core's TierRates)
//   node-local tiers   a SimGrid disk on node<n>.cpu; read and write sharing are non-linear
//                      callbacks returning the profile's aggregate bandwidth at n concurrent
//                      streams (the concurrency curve) — the mixed curve while the other
//                      direction has transfers in flight (TierTraffic says), the alone curve
//                      otherwise. Without mixed figures in the profile, read+write sharing
//                      is the time-sharing harmonic mean instead. Both directions are slowed
//                      by the tier's io_ratio while the node's CPU runs Adam.
// Remote tiers: a server host <tier>.server; reads traverse the shared backbone and the
// node's own links (non-linear, likewise), writes the reverse (see docs/simulator.md).
// Tiers updated in place (memory, host) move no bytes and get neither.

#include <cstdint>
#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

#include "core/rates.hpp"

namespace mlpo::sim {

namespace sg4 = simgrid::s4u;

// Transfers in flight on one tier of one node. The iteration model counts them around every
// transfer; the tier's sharing callbacks read them when SimGrid re-shares the tier (which it
// does whenever a transfer starts or ends there, after the actors of that instant ran).
struct TierTraffic {
  int reads = 0;
  int writes = 0;
};

struct TierEndpoint {
  sg4::Disk* disk = nullptr;       // node-local tier (neither this nor server: updated in place)
  sg4::Host* server = nullptr;     // remote tier: transfers are communications cpu <-> server
  std::vector<sg4::Link*> links;   // remote tier: the node's own read, write and mixed links
  TierTraffic* traffic = nullptr;  // owned by the Platform
};

// What runs on one node's CPU and tiers at the moment, for the coupling of CPU Adam and the
// tiers (core/tier_rates.hpp: io_ratio_adam_busy, adam_ratio_io_busy). The iteration model
// counts Adam's executions and (in TierTraffic) the transfers, and re-shares the other side
// when one side starts or stops (wake_tiers, wake_cpu): SimGrid re-evaluates a sharing
// callback only when its own resource changes.
struct NodeActivity {
  int adam = 0;  // Adam executions in flight on the node's CPU
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr adam_done = sg4::ConditionVariable::create();  // adam fell to 0
};

struct NodePlatform {
  sg4::Host* cpu = nullptr;
  NodeActivity* activity = nullptr;  // owned by the Platform
  std::vector<sg4::Host*> compute;   // per local rank; nullptr when compute is not modelled
  bool pcie = false;                 // compute hosts are GPUs reached over PCIe links
  std::vector<TierEndpoint> tiers;   // per plan tier
};

struct Platform {
  std::vector<NodePlatform> nodes;
  std::vector<std::unique_ptr<TierTraffic>> traffic;    // one per node and tier
  std::vector<std::unique_ptr<NodeActivity>> activity;  // one per node
};

// Makes SimGrid re-share the node's streamed tiers (their callbacks read NodeActivity), or its
// CPU (whose callback reads the tiers' TierTraffic): call after a change of the other side.
void wake_tiers(const NodePlatform& node);
void wake_cpu(const NodePlatform& node);

// Builds and seals the platform for `simulated_nodes` nodes. Shared remote backbones get
// `simulated_nodes / rates.nodes` of their capacity: nodes are identical, so one simulated
// node with its share behaves like every node of the full cluster.
Platform build_platform(const Rates& rates, std::int64_t simulated_nodes);

}  // namespace mlpo::sim
