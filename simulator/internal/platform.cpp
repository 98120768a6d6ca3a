#include "simulator/internal/platform.hpp"

#include <algorithm>
#include <functional>
#include <string>

namespace mlpo::sim {

namespace {

// A link whose aggregate bandwidth follows `curve` as concurrent flows come and go.
sg4::Link* curve_link(sg4::NetZone* zone, const std::string& name, double peak,
                      std::function<double(int)> curve) {
  sg4::Link* link = zone->create_link(name, peak);
  link->set_sharing_policy(sg4::Link::SharingPolicy::NONLINEAR,
                           [curve = std::move(curve)](double, int n) { return curve(std::max(n, 1)); });
  return link->seal();
}

// Remote tiers are shared by all nodes: one server per tier, one backbone per direction.
struct RemoteTier {
  sg4::Host* server = nullptr;
  sg4::Link* backbone_read = nullptr;
  sg4::Link* backbone_write = nullptr;
};

// Per tier, its server and backbones when it is remote (else empty); the backbone is the
// simulated nodes' share of the cluster's.
std::vector<RemoteTier> remote_tiers(sg4::NetZone* zone, const Rates& rates, std::int64_t simulated_nodes) {
  std::vector<RemoteTier> remote(rates.tiers.size());
  const double backbone =
      rates.remote_backbone_bps * static_cast<double>(simulated_nodes) / static_cast<double>(rates.nodes);
  for (std::size_t t = 0; t < rates.tiers.size(); ++t) {
    if (!rates.tiers[t].remote) continue;
    const std::string name = rates.tiers[t].name;
    remote[t].server = zone->create_host(name + ".server", 1e9)->seal();
    remote[t].backbone_read = zone->create_link(name + ".backbone.read", backbone)->seal();
    remote[t].backbone_write = zone->create_link(name + ".backbone.write", backbone)->seal();
  }
  return remote;
}

// The node's CPU: Adam's aggregate rate at k executions, slowed while a tier that takes CPU
// time streams.
sg4::Host* node_cpu(sg4::NetZone* zone, const std::string& node, const Rates& rates,
                    const std::vector<TierTraffic*>& traffic_of) {
  const double R = static_cast<double>(rates.ranks_per_node);
  sg4::Host* cpu = zone->create_host(node + ".cpu", rates.adam_node_eps(R));
  cpu->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR, [&rates, traffic_of](double, int k) {
    double ratio = 1;
    for (std::size_t t = 0; t < traffic_of.size(); ++t)
      if (traffic_of[t]->reads + traffic_of[t]->writes > 0)
        ratio = std::min(ratio, rates.tiers[t].adam_ratio_io_busy);
    return rates.adam_node_eps(std::max(k, 1)) * ratio;
  });
  cpu->seal();
  return cpu;
}

// The node's compute hosts, one per local rank: GPUs behind their PCIe links, or the CPU
// backend's one host at every rank's rate, or none when compute is not modelled.
void add_compute_hosts(sg4::NetZone* zone, const std::string& node, const Rates& rates, NodePlatform& np) {
  if (rates.compute_flops_per_rank > 0 && rates.compute_on_gpu) {
    np.pcie = true;
    for (std::int64_t g = 0; g < rates.ranks_per_node; ++g) {
      const std::string gpu = node + ".gpu" + std::to_string(g);
      sg4::Host* host = zone->create_host(gpu, rates.compute_flops_per_rank)->seal();
      sg4::Link* h2d = zone->create_link(gpu + ".pcie.h2d", rates.h2d_bps)->seal();
      sg4::Link* d2h = zone->create_link(gpu + ".pcie.d2h", rates.d2h_bps)->seal();
      zone->add_route(np.cpu->get_netpoint(), host->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(h2d)},
                      false);
      zone->add_route(host->get_netpoint(), np.cpu->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(d2h)},
                      false);
      np.compute.push_back(host);
    }
  } else if (rates.compute_flops_per_rank > 0) {
    const double R = static_cast<double>(rates.ranks_per_node);
    sg4::Host* host = zone->create_host(node + ".cpu-compute", rates.compute_flops_per_rank * R)->seal();
    np.compute.assign(static_cast<std::size_t>(rates.ranks_per_node), host);
  } else {
    np.compute.assign(static_cast<std::size_t>(rates.ranks_per_node), nullptr);
  }
}

// A tier's bandwidth at k concurrent transfers: reads, writes, and the read+write constraint.
struct TierCurves {
  std::function<double(int)> read, write, shared;
};

TierCurves tier_curves(const TierRates& tr, const NodeActivity* activity, const TierTraffic* traffic) {
  // While the node's CPU runs Adam, the tier gets its rates x io_ratio.
  auto io_share = [&tr, activity] { return activity->adam > 0 ? tr.io_ratio_adam_busy : 1.0; };
  TierCurves curves;
  // Reads (writes) follow the mixed curve while the other direction is busy too, else
  // their own; without mixed figures, the read+write constraint time-shares them.
  curves.read = [&tr, traffic, io_share](int k) {
    return (traffic->writes > 0 ? tr.read_bps_mixed(std::max(k, 1)) : tr.read_bps(std::max(k, 1))) *
           io_share();
  };
  curves.write = [&tr, traffic, io_share](int k) {
    return (traffic->reads > 0 ? tr.write_bps_mixed(std::max(k, 1)) : tr.write_bps(std::max(k, 1))) *
           io_share();
  };
  // With mixed curves the read+write constraint never binds (100x both peaks: far above,
  // yet in the range the solver's precision is scaled to); it stays so that a transfer
  // starting in one direction makes SimGrid re-share the other.
  const double unbounded = 100 * (tr.peak_read_bps() + tr.peak_write_bps());
  curves.shared = [&tr, unbounded, io_share](int k) {
    return tr.measured_mixed() ? unbounded : tr.shared_bps(std::max(k, 1)) * io_share();
  };
  return curves;
}

// A node-local tier: a disk on the node's CPU host that shares as `curves` say.
sg4::Disk* local_tier_disk(sg4::Host* cpu, const std::string& name, const TierRates& tr,
                           const TierCurves& curves) {
  sg4::Disk* disk = cpu->create_disk(name, tr.peak_read_bps(), tr.peak_write_bps());
  disk->set_readwrite_bandwidth(std::max(tr.peak_read_bps(), tr.peak_write_bps()));
  using Op = sg4::Disk::Operation;
  using Policy = sg4::Disk::SharingPolicy;
  disk->set_sharing_policy(Op::READ, Policy::NONLINEAR,
                           [read = curves.read](double, int k) { return read(k); });
  disk->set_sharing_policy(Op::WRITE, Policy::NONLINEAR,
                           [write = curves.write](double, int k) { return write(k); });
  disk->set_sharing_policy(Op::READWRITE, Policy::NONLINEAR,
                           [shared = curves.shared](double, int k) { return shared(k); });
  disk->seal();
  return disk;
}

// A remote tier seen from one node: its own read, write and mixed links, routed with the
// tier's backbones to the tier's server.
void add_remote_tier_links(sg4::NetZone* zone, const std::string& base, sg4::Host* cpu, const TierRates& tr,
                           const TierCurves& curves, const RemoteTier& remote, TierEndpoint& ep) {
  sg4::Link* rd = curve_link(zone, base + ".read", tr.peak_read_bps(), curves.read);
  sg4::Link* wr = curve_link(zone, base + ".write", tr.peak_write_bps(), curves.write);
  sg4::Link* mixed =
      curve_link(zone, base + ".mixed", std::max(tr.peak_read_bps(), tr.peak_write_bps()), curves.shared);
  ep.links = {rd, wr, mixed};
  ep.server = remote.server;
  zone->add_route(ep.server->get_netpoint(), cpu->get_netpoint(), nullptr, nullptr,
                  {sg4::LinkInRoute(remote.backbone_read), sg4::LinkInRoute(rd), sg4::LinkInRoute(mixed)},
                  false);
  zone->add_route(cpu->get_netpoint(), ep.server->get_netpoint(), nullptr, nullptr,
                  {sg4::LinkInRoute(wr), sg4::LinkInRoute(mixed), sg4::LinkInRoute(remote.backbone_write)},
                  false);
}

// One node: its CPU, compute hosts and tier endpoints; its activity and traffic counters go
// to `platform`, which owns them.
NodePlatform build_node(sg4::NetZone* zone, const std::string& node, const Rates& rates,
                        const std::vector<RemoteTier>& remote, Platform& platform) {
  NodePlatform np;
  platform.activity.push_back(std::make_unique<NodeActivity>());
  const NodeActivity* activity = np.activity = platform.activity.back().get();
  std::vector<TierTraffic*> traffic_of;  // per tier, this node's
  for (std::size_t t = 0; t < rates.tiers.size(); ++t) {
    platform.traffic.push_back(std::make_unique<TierTraffic>());
    traffic_of.push_back(platform.traffic.back().get());
  }
  np.cpu = node_cpu(zone, node, rates, traffic_of);
  add_compute_hosts(zone, node, rates, np);

  for (std::size_t t = 0; t < rates.tiers.size(); ++t) {
    const TierRates& tr = rates.tiers[t];
    TierEndpoint ep;
    ep.traffic = traffic_of[t];
    if (!updated_in_place(tr.kind)) {  // else no transfers: no disk, no links
      const TierCurves curves = tier_curves(tr, activity, ep.traffic);
      if (!tr.remote)
        ep.disk = local_tier_disk(np.cpu, node + "." + tr.name, tr, curves);
      else
        add_remote_tier_links(zone, node + "." + tr.name, np.cpu, tr, curves, remote[t], ep);
    }
    np.tiers.push_back(ep);
  }
  return np;
}

}  // namespace

Platform build_platform(const Rates& rates, std::int64_t simulated_nodes) {
  auto* zone = sg4::create_full_zone("cluster");
  Platform platform;
  const std::vector<RemoteTier> remote = remote_tiers(zone, rates, simulated_nodes);
  for (std::int64_t n = 0; n < simulated_nodes; ++n)
    platform.nodes.push_back(build_node(zone, "node" + std::to_string(n), rates, remote, platform));
  zone->seal();
  return platform;
}

void wake_tiers(const NodePlatform& node) {
  for (const TierEndpoint& ep : node.tiers) {
    if (ep.disk != nullptr) {
      ep.disk->set_read_bandwidth(ep.disk->get_read_bandwidth());
      ep.disk->set_write_bandwidth(ep.disk->get_write_bandwidth());
    }
    for (sg4::Link* link : ep.links) link->set_bandwidth(link->get_bandwidth());
  }
}

void wake_cpu(const NodePlatform& node) { node.cpu->set_pstate(node.cpu->get_pstate()); }

}  // namespace mlpo::sim
