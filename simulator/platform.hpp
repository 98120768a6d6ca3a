#pragma once
// Platform: the simulated cluster, built with SimGrid S4U in one place from a plan's Rates.
// Internal to the simulator (only its .cpp files include SimGrid).
//
// Per node:
//   node<n>.cpu        one host for the node's CPU-Adam; its speed is the Adam curve in
//                      elements/s, shared non-linearly (n ranks at once get adam(n x threads))
//   node<n>.gpu<g>     one host per rank's GPU (bf16 FLOP/s), with PCIe links h2d / d2h to cpu
//   node<n>.cpu-compute  without GPUs: the CPU backend's GEMM host, shared by the node's ranks
//   node-local tiers   a SimGrid disk on node<n>.cpu; read, write and read+write sharing are
//                      non-linear callbacks returning the profile's aggregate bandwidth at n
//                      concurrent streams (the concurrency curve)
// Remote tiers: a server host <tier>.server; reads traverse the shared backbone and the
// node's own link (non-linear: the profile's curve), writes the reverse (see docs/simulator.md).

#include <cstdint>
#include <vector>

#include <simgrid/s4u.hpp>

#include "simulator/rates.hpp"

namespace mlpo::sim {

namespace sg4 = simgrid::s4u;

struct TierEndpoint {
  sg4::Disk* disk = nullptr;    // node-local tier
  sg4::Host* server = nullptr;  // remote tier: transfers are communications cpu <-> server
};

struct NodePlatform {
  sg4::Host* cpu = nullptr;
  std::vector<sg4::Host*> compute;  // per local rank; nullptr when compute is not modelled
  bool pcie = false;                // compute hosts are GPUs reached over PCIe links
  std::vector<TierEndpoint> tiers;  // per plan tier
};

struct Platform {
  std::vector<NodePlatform> nodes;
};

// Builds and seals the platform for `simulated_nodes` nodes. Shared remote backbones get
// `simulated_nodes / rates.nodes` of their capacity: nodes are identical, so one simulated
// node with its share behaves like every node of the full cluster.
Platform build_platform(const Rates& rates, std::int64_t simulated_nodes);

}  // namespace mlpo::sim
