#include "simulator/iteration_model.hpp"

#include <xbt/log.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rates.hpp"
#include "simulator/internal/exchange_schedule.hpp"
#include "simulator/internal/platform.hpp"
#include "simulator/simulation_process.hpp"
#include "simulator/internal/simulation_rates.hpp"
#include "simulator/internal/slot_pool.hpp"
#include "simulator/internal/workload.hpp"

namespace mlpo::sim {

namespace {

constexpr double kRankSkew_s = 10e-6;  // prefetch_actor

// Runs `flops` on `host` and waits. (In SimGrid 3.32 Host::execute runs on the calling
// actor's host, whatever host it is called on.)
void execute_on(sg4::Host* host, double flops) { sg4::this_actor::exec_init(flops)->set_host(host)->wait(); }

// A transfer handed to a tier stream. `step` < 0 for writes and gradient flushes.
struct Transfer {
  std::int64_t step = -1;
  double bytes = 0;
  bool frees_buffer = false;
  bool last = false;    // tells the stream to stop
  bool marker = false;  // PCIe streams: no transfer; signal pcie_done once everything before it is done
};

// FIFO between actors; the semaphore counts queued items. Actors run one at a time between
// simcalls, so the deque needs no lock.
template <class Item>
class Queue {
 public:
  void push(const Item& t) {
    items_.push_back(t);
    count_->release();
  }
  Item pop() {
    count_->acquire();
    Item t = items_.front();
    items_.pop_front();
    return t;
  }

 private:
  std::deque<Item> items_;
  sg4::SemaphorePtr count_ = sg4::Semaphore::create(0);
};
using TransferQueue = Queue<Transfer>;

// A collective handed to a rank's exchange actor (its LayerExchange thread).
struct ExchangeOp {
  double seconds = 0;
  bool gather = true;  // else a reduce-scatter
  bool last = false;   // tells the actor to stop
};

// Node-wide state of one tier: its concurrency slots and, on node 0, what it did.
struct NodeTier {
  std::shared_ptr<SlotPool> read_slot;   // null: no limit
  std::shared_ptr<SlotPool> write_slot;  // the same pool as read_slot when scope is combined
  double busy_since = 0;
  double busy_s = 0;
  double read_bytes = 0;
  double write_bytes = 0;
  double slot_wait_s = 0;
  double adam_wait_due = 0;  // handoff(): the share of waits for Adam not yet waited
};

struct Rank {
  std::int64_t node = 0;
  std::int64_t local = 0;
  sg4::SemaphorePtr start_update = sg4::Semaphore::create(0);
  sg4::SemaphorePtr window;   // reads in flight ahead of Adam
  sg4::SemaphorePtr buffers;  // pinned subgroup buffers
  sg4::SemaphorePtr writes_done = sg4::Semaphore::create(0);
  std::vector<sg4::SemaphorePtr> ready;  // per update step: its read finished
  std::vector<TransferQueue> reads;      // per tier
  std::vector<TransferQueue> writes;     // per tier
  std::vector<int> readers;              // stream actors per tier
  std::vector<int> writers;
  TransferQueue to_gpu;   // bf16 weights, host to device
  TransferQueue to_host;  // bf16 gradients, device to host
  sg4::SemaphorePtr pcie_done = sg4::Semaphore::create(0);
  Queue<ExchangeOp> exchange;                               // ZeRO-3 collectives, in queue order
  sg4::SemaphorePtr gathered = sg4::Semaphore::create(0);   // one release per finished gather
  sg4::SemaphorePtr scattered = sg4::Semaphore::create(0);  // one release per finished reduce-scatter
  double stall_s = 0;
  double adam_s = 0;  // its AdamW calls: the exec and the pool's wake-up, as the executor times them
};

class IterationModel {
 public:
  IterationModel(const Workload& w, Rates rates, const Plan& plan, const SimulationOptions& options)
      : w_(w),
        rates_(std::move(rates)),
        collectives_(collective_cost_of(rates_, w)),
        plan_(plan),
        options_(options) {
    for (const TierRates& t : rates_.tiers) tiers_slow_with_adam_ |= t.io_ratio_adam_busy != 1;
  }

  SimulationResult run();

 private:
  // Per tier, the transfers one rank makes in the iteration: reads (misses) and writes
  // (write-backs, plus one for the fp32 gradient flush when there is one).
  struct TierTransfers {
    std::vector<std::int64_t> reads;
    std::vector<std::int64_t> writes;
  };

  // Setup: each node's tier slots, the transfers per tier, the ranks' queues and semaphores.
  void build_node_tiers(std::int64_t nodes);
  TierTransfers tier_transfers() const;
  void build_ranks(std::int64_t nodes);
  // Actors: each rank's compute/Adam actor, its prefetcher, PCIe streams and tier streams.
  void start_actors(const TierTransfers& transfers);
  // Results: the phases' times and node 0's tier figures.
  void collect_results();

  void rank_actor(Rank& rank);
  // The rank's phases, as rank_actor runs them between the barriers: forward; backward, which
  // returns the fp32 gradient flush, (tier, bytes); what follows it (the gradients' last D2H,
  // the gradient norm, the flush); the update's walk over the order, which returns the writes
  // it queued; and its end, once they are done (the streams stopped).
  void forward_phase(Rank& rank, sg4::Host* gpu, const std::string& lane);
  std::vector<std::pair<std::size_t, double>> backward_phase(Rank& rank, const NodePlatform& np,
                                                             sg4::Host* gpu, const std::string& lane);
  void after_backward(Rank& rank, const NodePlatform& np, const std::string& lane,
                      const std::vector<std::pair<std::size_t, double>>& flush);
  std::int64_t update_walk(Rank& rank, const NodePlatform& np, const std::string& lane);
  void end_update(Rank& rank, const NodePlatform& np, std::int64_t writes);
  void prefetch_actor(Rank& rank);
  void read_stream(Rank& rank, std::size_t tier);
  void write_stream(Rank& rank, std::size_t tier);
  void pcie_stream(Rank& rank, bool to_gpu);
  void exchange_actor(Rank& rank);
  // One pass of forward or backward (exchange_schedule.hpp); `after(part)` runs after each
  // part's compute (backward hands its gradients to PCIe and the flush there).
  void run_pass(Rank& rank, sg4::Host* gpu, const std::vector<PassPart>& parts,
                const std::function<void(const PassPart&)>& after);
  void transfer(const Rank& rank, std::size_t tier, double bytes, bool is_read);
  // One subgroup's Adam on the node's CPU; the node's tiers slow down while any runs.
  void adam(const NodePlatform& np, double elements);
  // A transfer that waited takes the slot over from one that just finished: the tier idles
  // for the profile's slot handoff (TierRates::slot_handoff_*).
  void handoff(const NodePlatform& np, NodeTier& nt, std::size_t tier);
  void record(std::int64_t node, const std::string& lane, const char* kind, double start) {
    if (options_.timeline && node == 0)
      result_.timeline.push_back({lane, kind, start, sg4::Engine::get_clock()});
  }

  const Workload& w_;
  const Rates rates_;
  CollectiveCost collectives_;
  const Plan& plan_;
  const SimulationOptions& options_;
  bool tiers_slow_with_adam_ = false;  // a tier's io_ratio_adam_busy is not 1: wake them around Adam
  Platform platform_;
  std::vector<std::vector<NodeTier>> node_tiers_;  // [node][tier]
  std::vector<std::unique_ptr<Rank>> ranks_;
  sg4::BarrierPtr barrier_;
  double phase_end_[4] = {0, 0, 0, 0};  // start, forward, backward, update
  SimulationResult result_;
};

void IterationModel::transfer(const Rank& rank, std::size_t tier, double bytes, bool is_read) {
  NodeTier& nt = node_tiers_[static_cast<std::size_t>(rank.node)][tier];
  const std::shared_ptr<SlotPool>& slot = is_read ? nt.read_slot : nt.write_slot;
  const std::string lane = "tier " + rates_.tiers[tier].name;
  const double asked = sg4::Engine::get_clock();
  if (slot) slot->acquire();
  const NodePlatform& np = platform_.nodes[static_cast<std::size_t>(rank.node)];
  if (sg4::Engine::get_clock() > asked) {
    record(rank.node, lane, "slot-wait", asked);
    handoff(np, nt, tier);
  }
  const double start = sg4::Engine::get_clock();
  nt.slot_wait_s += start - asked;
  const TierEndpoint& ep = np.tiers[tier];
  sg4::Host* cpu = np.cpu;
  const auto size = static_cast<sg_size_t>(bytes);
  // The node's transfers in flight on this tier: what its sharing callbacks see, and its busy
  // time. The node's CPU Adam runs slower while the tier moves bytes (platform.hpp).
  int& in_flight = is_read ? ep.traffic->reads : ep.traffic->writes;
  const bool slows_adam = rates_.tiers[tier].adam_ratio_io_busy != 1;
  ++in_flight;
  if (ep.traffic->reads + ep.traffic->writes == 1) {
    nt.busy_since = start;
    if (slows_adam) wake_cpu(np);
  }
  if (ep.disk != nullptr) {
    if (is_read)
      ep.disk->read(size);
    else
      ep.disk->write(size);
  } else if (is_read) {
    sg4::Comm::sendto(ep.server, cpu, size);
  } else {
    sg4::Comm::sendto(cpu, ep.server, size);
  }
  --in_flight;
  if (ep.traffic->reads + ep.traffic->writes == 0) {
    nt.busy_s += sg4::Engine::get_clock() - nt.busy_since;
    if (slows_adam) wake_cpu(np);
  }
  (is_read ? nt.read_bytes : nt.write_bytes) += bytes;
  record(rank.node, lane, is_read ? "read" : "write", start);
  if (slot) slot->release();
}

void IterationModel::adam(const NodePlatform& np, double elements) {
  if (np.activity->adam++ == 0 && tiers_slow_with_adam_) wake_tiers(np);
  execute_on(np.cpu, elements);
  if (--np.activity->adam == 0) {
    if (tiers_slow_with_adam_) wake_tiers(np);
    np.activity->adam_done->notify_all();
  }
}

void IterationModel::handoff(const NodePlatform& np, NodeTier& nt, std::size_t tier) {
  const TierRates& tr = rates_.tiers[tier];
  // The waiting thread wakes and submits...
  if (tr.slot_handoff_s > 0) sg4::this_actor::sleep_for(tr.slot_handoff_s);
  // ...unless the Adam that the read giving the slot back has started holds the cores: the
  // profile's share of handoffs waits it out (a running total, so that waits_adam = 0.4 makes
  // 2 handoffs in 5 wait).
  if (tr.slot_handoff_waits_adam > 0 && np.activity->adam > 0) {
    nt.adam_wait_due += tr.slot_handoff_waits_adam;
    if (nt.adam_wait_due >= 1) {
      nt.adam_wait_due -= 1;
      std::unique_lock lock(*np.activity->mutex);
      while (np.activity->adam > 0) np.activity->adam_done->wait(lock);
    }
  }
}

void IterationModel::read_stream(Rank& rank, std::size_t tier) {
  for (;;) {
    const Transfer t = rank.reads[tier].pop();
    if (t.last) return;
    transfer(rank, tier, t.bytes, true);
    rank.ready[static_cast<std::size_t>(t.step)]->release();
  }
}

void IterationModel::write_stream(Rank& rank, std::size_t tier) {
  for (;;) {
    const Transfer t = rank.writes[tier].pop();
    if (t.last) return;
    transfer(rank, tier, t.bytes, false);
    if (t.frees_buffer) rank.buffers->release();
    rank.writes_done->release();
  }
}

void IterationModel::pcie_stream(Rank& rank, bool to_gpu) {
  const NodePlatform& np = platform_.nodes[static_cast<std::size_t>(rank.node)];
  sg4::Host* gpu = np.compute[static_cast<std::size_t>(rank.local)];
  TransferQueue& queue = to_gpu ? rank.to_gpu : rank.to_host;
  for (;;) {
    const Transfer t = queue.pop();
    if (t.last) return;
    if (t.marker) {
      rank.pcie_done->release();
      continue;
    }
    if (to_gpu)
      sg4::Comm::sendto(np.cpu, gpu, static_cast<std::uint64_t>(t.bytes));
    else
      sg4::Comm::sendto(gpu, np.cpu, static_cast<std::uint64_t>(t.bytes));
  }
}

void IterationModel::exchange_actor(Rank& rank) {
  // The CPU backend's collectives copy and sum on the cores the rank computes on: their bytes
  // are work on its compute host, shared with its compute (exchange_schedule.hpp).
  sg4::Host* cores =
      collectives_.on_compute_cores
          ? platform_.nodes[static_cast<std::size_t>(rank.node)].compute[static_cast<std::size_t>(rank.local)]
          : nullptr;
  for (;;) {
    const ExchangeOp op = rank.exchange.pop();
    if (op.last) return;
    const double busy = cores != nullptr ? collectives_.core_seconds(op.seconds) : 0.0;
    sg4::this_actor::sleep_for(op.seconds - busy);
    if (busy > 0) execute_on(cores, busy * rates_.compute_flops_per_rank);
    (op.gather ? rank.gathered : rank.scattered)->release();
  }
}

// As pass_seconds (exchange_schedule.cpp) computes it: acquire a part (wait for its gather),
// queue the next part's gather, compute, hand the gradients over (wait for the reduce-scatter
// two before), and drain the reduce-scatters at the end.
void IterationModel::run_pass(Rank& rank, sg4::Host* gpu, const std::vector<PassPart>& parts,
                              const std::function<void(const PassPart&)>& after) {
  std::size_t scatters = 0, scatters_done = 0;
  if (const std::size_t first = next_gathered(parts, static_cast<std::size_t>(-1)); first < parts.size())
    rank.exchange.push({parts[first].gather_s, true});
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PassPart& p = parts[i];
    if (p.gather_s >= 0) {
      rank.gathered->acquire();
      if (const std::size_t j = next_gathered(parts, i); j < parts.size())
        rank.exchange.push({parts[j].gather_s, true});
    }
    if (p.to_device_s > 0)
      sg4::this_actor::sleep_for(p.to_device_s);  // synchronous copy: PCIe otherwise idle
    // The host runs at compute_flops_per_rank per rank: the part's seconds in its FLOPs.
    if (gpu != nullptr) execute_on(gpu, p.compute_s * rates_.compute_flops_per_rank);
    if (after) after(p);
    if (p.reduce_scatter_s < 0) continue;
    for (; scatters >= 2 && scatters_done + 1 < scatters; ++scatters_done) rank.scattered->acquire();
    if (p.to_host_s > 0) sg4::this_actor::sleep_for(p.to_host_s);
    rank.exchange.push({p.reduce_scatter_s, false});
    ++scatters;
  }
  for (; scatters_done < scatters; ++scatters_done) rank.scattered->acquire();
}

void IterationModel::prefetch_actor(Rank& rank) {
  rank.start_update->acquire();
  // Ranks start their reads kRankSkew_s apart, in rank order: the executor's never start at
  // one instant, and identical ranks started together would stay in a lockstep no run shows
  // (under a combined slot limit below the node's streams, every rank's reads would take the
  // slots together, then every rank's writes). Any skew breaks it: 10 us and 1 ms predict the
  // testbed's plans within 1 % of each other (docs/simulator.md).
  sg4::this_actor::sleep_for(kRankSkew_s * static_cast<double>(rank.node * w_.ranks_per_node + rank.local));
  for (std::size_t i = 0; i < w_.steps.size(); ++i) {
    const UpdateStep& s = w_.steps[i];
    if (s.resident || s.hit) continue;
    rank.window->acquire();
    rank.buffers->acquire();
    rank.reads[static_cast<std::size_t>(s.tier)].push(
        {static_cast<std::int64_t>(i),
         static_cast<double>(w_.extent_elements()) * w_.read_bytes_per_element});
  }
}

void IterationModel::forward_phase(Rank& rank, sg4::Host* gpu, const std::string& lane) {
  const double t = sg4::Engine::get_clock();
  const std::vector<PassPart> forward = forward_parts(w_, rates_.compute, collectives_);
  for (std::int64_t micro = 0; micro < w_.micro_steps; ++micro) run_pass(rank, gpu, forward, {});
  record(rank.node, lane, "forward", t);
}

std::vector<std::pair<std::size_t, double>> IterationModel::backward_phase(Rank& rank, const NodePlatform& np,
                                                                           sg4::Host* gpu,
                                                                           const std::string& lane) {
  const double t = sg4::Engine::get_clock();
  std::vector<std::pair<std::size_t, double>> flush;  // (tier, bytes), after backward
  for (std::int64_t micro = 0; micro < w_.micro_steps; ++micro) {
    const bool last = micro + 1 == w_.micro_steps;
    run_pass(rank, gpu, backward_parts(w_, rates_.compute, collectives_, last), [&](const PassPart& part) {
      // With the exchange the full fp32 gradients go to the host in the pass (to_host_s);
      // without it, the rank's bf16 gradients on the D2H stream.
      if (np.pcie && !collectives_.modelled())
        rank.to_host.push({-1, part.layer->grad_elements * kBf16Bytes});
      if (w_.grad_flush_bytes_per_element == 0 || !last) return;
      // Each subgroup's fp32 gradients go to its own tier (resident ones stay in memory):
      // the layer's gradients are spread over the tiers as the shard's elements are.
      for (std::size_t tier = 0; tier < w_.flush_elements.size(); ++tier) {
        if (w_.flush_elements[tier] <= 0) continue;
        const double share = w_.flush_elements[tier] / static_cast<double>(w_.params_per_rank);
        flush.emplace_back(tier, part.layer->grad_elements * share * w_.grad_flush_bytes_per_element);
      }
    });
  }
  if (const double small = small_collectives_s(collectives_); small > 0) sg4::this_actor::sleep_for(small);
  record(rank.node, lane, "backward", t);
  return flush;
}

void IterationModel::after_backward(Rank& rank, const NodePlatform& np, const std::string& lane,
                                    const std::vector<std::pair<std::size_t, double>>& flush) {
  if (np.pcie) {
    rank.to_host.push({-1, 0, false, false, true});
    rank.pcie_done->acquire();
  }
  // The global gradient norm over the rank's bf16 shard (the node's ranks at once), once
  // every gradient is in host memory.
  if (rates_.grad_norm_eps > 0) {
    const double norm_start = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(static_cast<double>(rates_.ranks_per_node * w_.params_per_rank) /
                               rates_.grad_norm_eps);
    record(rank.node, lane, "gradient norm", norm_start);
  }
  // The executor flushes the fp32 gradients once backward is done (flush_gradients, after
  // the gradient norm), every tier's at once, and waits for them.
  const double flush_start = sg4::Engine::get_clock();
  for (const auto& [tier, bytes] : flush) rank.writes[tier].push({-1, bytes});
  for (std::size_t i = 0; i < flush.size(); ++i) rank.writes_done->acquire();
  if (!flush.empty()) record(rank.node, lane, "flush", flush_start);
}

std::int64_t IterationModel::update_walk(Rank& rank, const NodePlatform& np, const std::string& lane) {
  std::int64_t writes = 0;
  for (std::size_t i = 0; i < w_.steps.size(); ++i) {
    const UpdateStep& s = w_.steps[i];
    const bool read = !s.resident && !s.hit;  // its read was queued and holds a buffer
    if (read) {
      const double t = sg4::Engine::get_clock();
      rank.ready[i]->acquire();
      rank.stall_s += sg4::Engine::get_clock() - t;
      if (sg4::Engine::get_clock() > t) record(rank.node, lane, "stall", t);
      rank.window->release();
    }
    const double t = sg4::Engine::get_clock();
    adam(np, rates_.adam_work(static_cast<double>(s.elements)));
    if (const double wake = rates_.adam_call_s(static_cast<double>(s.elements)); wake > 0)
      sg4::this_actor::sleep_for(wake);  // the pool's wake-up and join: waiting, not CPU work
    rank.adam_s += sg4::Engine::get_clock() - t;
    if (rates_.update_weight_copy_bps > 0)  // the CPU backend's resident weights: one thread's memcpy
      sg4::this_actor::sleep_for(static_cast<double>(s.elements) * kBf16Bytes /
                                 rates_.update_weight_copy_bps);
    record(rank.node, lane, "adam", t);
    if (np.pcie) rank.to_gpu.push({-1, static_cast<double>(s.elements) * kBf16Bytes});
    if (s.write_subgroup >= 0) {
      rank.writes[static_cast<std::size_t>(s.write_tier)].push(
          {-1, static_cast<double>(s.write_elements) * w_.write_bytes_per_element, !s.hit});
      ++writes;
    } else if (read) {
      rank.buffers->release();
    }
  }
  return writes;
}

void IterationModel::end_update(Rank& rank, const NodePlatform& np, std::int64_t writes) {
  for (std::size_t tier = 0; tier < rank.reads.size(); ++tier) {
    for (int j = 0; j < rank.readers[tier]; ++j) rank.reads[tier].push({-1, 0, false, true});
    for (int j = 0; j < rank.writers[tier]; ++j) rank.writes[tier].push({-1, 0, false, true});
  }
  for (std::int64_t i = 0; i < writes; ++i) rank.writes_done->acquire();
  if (np.pcie) {
    rank.to_gpu.push({-1, 0, false, false, true});
    rank.pcie_done->acquire();
  }
  rank.to_gpu.push({-1, 0, false, true});
  rank.to_host.push({-1, 0, false, true});
  if (collectives_.modelled()) rank.exchange.push({0, false, true});
  // Starting and joining the pipeline's reader and writer threads: the rank's own time.
  if (const double setup = static_cast<double>(w_.pipeline_threads()) * rates_.thread_start_s; setup > 0)
    sg4::this_actor::sleep_for(setup);
}

void IterationModel::rank_actor(Rank& rank) {
  const NodePlatform& np = platform_.nodes[static_cast<std::size_t>(rank.node)];
  sg4::Host* gpu = np.compute[static_cast<std::size_t>(rank.local)];
  const std::string lane = "rank " + std::to_string(rank.local);
  const bool leader = rank.node == 0 && rank.local == 0;

  barrier_->wait();
  if (!options_.update_only) {
    forward_phase(rank, gpu, lane);
    barrier_->wait();
    if (leader) phase_end_[1] = sg4::Engine::get_clock();
    const std::vector<std::pair<std::size_t, double>> flush = backward_phase(rank, np, gpu, lane);
    after_backward(rank, np, lane, flush);
  } else {
    barrier_->wait();
    if (leader) phase_end_[1] = sg4::Engine::get_clock();
  }
  barrier_->wait();
  if (leader) phase_end_[2] = sg4::Engine::get_clock();

  // Update: Adam walks the order; reads were queued ahead by the prefetcher.
  rank.start_update->release();
  const std::int64_t writes = update_walk(rank, np, lane);
  end_update(rank, np, writes);
  barrier_->wait();
  if (leader) phase_end_[3] = sg4::Engine::get_clock();
}

SimulationResult IterationModel::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine engine("mlpo-sim");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");

  // A limit on a remote tier counts every node's transfers (its lock files live on the shared
  // file system): which node waits for which shows only when every node is simulated.
  bool shared_slots = false;
  for (std::size_t t = 0; t < plan_.tiers.size(); ++t)
    shared_slots |= rates_.tiers[t].remote && plan_.tiers[t].concurrency_limit > 0;
  const std::int64_t nodes = options_.full_cluster || (shared_slots && rates_.nodes > 1) ? rates_.nodes : 1;
  result_.simulated_nodes = nodes;
  result_.warnings = rates_.warnings;
  platform_ = build_platform(rates_, nodes);
  build_node_tiers(nodes);
  const TierTransfers transfers = tier_transfers();
  build_ranks(nodes);
  start_actors(transfers);
  engine.run();
  collect_results();
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return result_;
}

void IterationModel::build_node_tiers(std::int64_t nodes) {
  const std::size_t tiers = plan_.tiers.size();
  for (std::int64_t n = 0; n < nodes; ++n) {
    std::vector<NodeTier> per_tier(tiers);
    for (std::size_t t = 0; t < tiers; ++t) {
      const auto k = static_cast<unsigned>(plan_.tiers[t].concurrency_limit);
      if (k == 0) continue;
      if (rates_.tiers[t].remote && n > 0) {  // the cluster's slots: node 0's pools
        per_tier[t].read_slot = node_tiers_[0][t].read_slot;
        per_tier[t].write_slot = node_tiers_[0][t].write_slot;
        continue;
      }
      // Each pool draws its waiters from its own seed: the same plan simulates the same.
      const auto seed = static_cast<std::uint32_t>(2 * (n * static_cast<std::int64_t>(tiers) + t) + 1);
      per_tier[t].read_slot = std::make_shared<SlotPool>(k, seed);
      per_tier[t].write_slot = plan_.slot_scope == SlotScope::combined
                                   ? per_tier[t].read_slot
                                   : std::make_shared<SlotPool>(k, seed + 1);
    }
    node_tiers_.push_back(std::move(per_tier));
  }
}

IterationModel::TierTransfers IterationModel::tier_transfers() const {
  const std::size_t tiers = plan_.tiers.size();
  TierTransfers n{w_.reads, w_.writes};
  if (!options_.update_only)
    for (std::size_t t = 0; t < tiers; ++t)
      if (w_.grad_flush_bytes_per_element > 0 && w_.flush_elements[t] > 0) ++n.writes[t];
  for (std::size_t t = 0; t < tiers; ++t)  // the platform has no endpoint for them
    MLPO_CHECK(!w_.in_place[t] || n.reads[t] + n.writes[t] == 0,
               "transfers on tier " + plan_.tiers[t].name + ", updated in place");
  return n;
}

void IterationModel::build_ranks(std::int64_t nodes) {
  const std::size_t tiers = plan_.tiers.size();
  barrier_ = sg4::Barrier::create(static_cast<unsigned>(nodes * rates_.ranks_per_node));
  for (std::int64_t n = 0; n < nodes; ++n) {
    for (std::int64_t g = 0; g < rates_.ranks_per_node; ++g) {
      auto rank = std::make_unique<Rank>();
      rank->node = n;
      rank->local = g;
      rank->window = sg4::Semaphore::create(static_cast<unsigned>(plan_.prefetch_depth));
      rank->buffers = sg4::Semaphore::create(static_cast<unsigned>(plan_.buffers));
      rank->ready.reserve(w_.steps.size());
      for (std::size_t i = 0; i < w_.steps.size(); ++i) rank->ready.push_back(sg4::Semaphore::create(0));
      rank->reads = std::vector<TransferQueue>(tiers);
      rank->writes = std::vector<TransferQueue>(tiers);
      ranks_.push_back(std::move(rank));
    }
  }
}

// Streams per rank and tier, as the executor's UpdatePipeline has them: one reader and one
// writer, each moving one subgroup at a time (the prefetch depth bounds how far ahead the
// reader runs, not how many reads are in flight), none for a tier without transfers — so
// none at all for a tier updated in place.
void IterationModel::start_actors(const TierTransfers& transfers) {
  for (auto& rank_ptr : ranks_) {
    Rank& rank = *rank_ptr;
    const NodePlatform& np = platform_.nodes[static_cast<std::size_t>(rank.node)];
    sg4::Host* cpu = np.cpu;
    const std::string name = "node" + std::to_string(rank.node) + ".rank" + std::to_string(rank.local);
    sg4::Host* home = np.compute[static_cast<std::size_t>(rank.local)];
    sg4::Actor::create(name, home != nullptr ? home : cpu, [this, &rank] { rank_actor(rank); });
    sg4::Actor::create(name + ".prefetch", cpu, [this, &rank] { prefetch_actor(rank); });
    if (collectives_.modelled())
      sg4::Actor::create(name + ".exchange", cpu, [this, &rank] { exchange_actor(rank); });
    if (np.pcie) {
      sg4::Actor::create(name + ".h2d", cpu, [this, &rank] { pcie_stream(rank, true); });
      sg4::Actor::create(name + ".d2h", cpu, [this, &rank] { pcie_stream(rank, false); });
    }
    for (std::size_t t = 0; t < plan_.tiers.size(); ++t) {
      rank.readers.push_back(transfers.reads[t] > 0 ? 1 : 0);
      rank.writers.push_back(transfers.writes[t] > 0 ? 1 : 0);
      for (int j = 0; j < rank.readers[t]; ++j)
        sg4::Actor::create(name + "." + plan_.tiers[t].name + ".read" + std::to_string(j), cpu,
                           [this, &rank, t] { read_stream(rank, t); });
      for (int j = 0; j < rank.writers[t]; ++j)
        sg4::Actor::create(name + "." + plan_.tiers[t].name + ".write" + std::to_string(j), cpu,
                           [this, &rank, t] { write_stream(rank, t); });
    }
  }
}

void IterationModel::collect_results() {
  Prediction& p = result_.prediction;
  p.model = "simgrid";
  p.forward_s = phase_end_[1] - phase_end_[0];
  p.backward_s = phase_end_[2] - phase_end_[1];
  p.update_s = phase_end_[3] - phase_end_[2];
  p.iteration_s = phase_end_[3] - phase_end_[0];
  for (const auto& rank : ranks_)
    if (rank->node == 0) {
      p.stall_s += rank->stall_s / static_cast<double>(rates_.ranks_per_node);
      p.adam_s += rank->adam_s / static_cast<double>(rates_.ranks_per_node);
    }
  for (std::size_t t = 0; t < plan_.tiers.size(); ++t) {
    const NodeTier& nt = node_tiers_[0][t];
    p.tiers.push_back({plan_.tiers[t].name, nt.read_bytes, nt.write_bytes, nt.busy_s});
    result_.tiers.push_back(
        {plan_.tiers[t].name, nt.slot_wait_s, p.iteration_s > 0 ? nt.busy_s / p.iteration_s : 0});
  }
  result_.cache_hits = w_.cache_hits;
}

}  // namespace

Json to_json(const SimulationResult& r) {
  Json tiers = Json::array();
  for (const auto& t : r.tiers)
    tiers.push_back(
        Json{{"name", t.name}, {"slot_wait_s", t.slot_wait_s}, {"busy_fraction", t.busy_fraction}});
  Json timeline = Json::array();
  for (const auto& e : r.timeline) timeline.push_back(Json::array({e.lane, e.kind, e.start, e.end}));
  return Json{{"prediction", to_json(r.prediction)},
              {"tiers", tiers},
              {"cache_hits", r.cache_hits},
              {"simulated_nodes", r.simulated_nodes},
              {"wall_s", r.wall_s},
              {"timeline", timeline},
              {"warnings", r.warnings}};
}

SimulationResult simulation_result_from_json(const Json& j) {
  SimulationResult r;
  r.prediction = prediction_from_json(j.at("prediction"), "prediction");
  for (const auto& t : j.at("tiers"))
    r.tiers.push_back({t.at("name").get<std::string>(), t.at("slot_wait_s").get<double>(),
                       t.at("busy_fraction").get<double>()});
  r.cache_hits = j.at("cache_hits").get<std::int64_t>();
  r.simulated_nodes = j.at("simulated_nodes").get<std::int64_t>();
  r.wall_s = j.at("wall_s").get<double>();
  for (const auto& e : j.at("timeline"))
    r.timeline.push_back(
        {e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<double>(), e[3].get<double>()});
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  return r;
}

namespace {

// One simulation as a child-process job; the references must outlive run_in_children.
std::function<Json()> simulation_job(const Accounting& accounting, const Profile& profile, const Plan& plan,
                                     const SimulationOptions& options) {
  return [&accounting, &profile, &plan, &options] {
    const Workload w = make_workload(accounting, plan);
    IterationModel model(w, simulation_rates(profile, plan, options, accounting), plan, options);
    return to_json(model.run());
  };
}

std::vector<SimulationResult> run_simulations(const std::vector<std::function<Json()>>& work, int jobs) {
  std::vector<SimulationResult> results;
  for (const Json& j : run_in_children(work, jobs)) results.push_back(simulation_result_from_json(j));
  return results;
}

}  // namespace

std::vector<SimulationResult> simulate_all(const Accounting& accounting, const Profile& profile,
                                           const std::vector<Plan>& plans, const SimulationOptions& options,
                                           int jobs) {
  std::vector<std::function<Json()>> work;
  for (const Plan& plan : plans) work.push_back(simulation_job(accounting, profile, plan, options));
  return run_simulations(work, jobs);
}

std::vector<SimulationResult> simulate_on_each(const Accounting& accounting,
                                               const std::vector<Profile>& profiles, const Plan& plan,
                                               const SimulationOptions& options, int jobs) {
  std::vector<std::function<Json()>> work;
  for (const Profile& profile : profiles) work.push_back(simulation_job(accounting, profile, plan, options));
  return run_simulations(work, jobs);
}

SimulationResult simulate(const Accounting& accounting, const Profile& profile, const Plan& plan,
                          const SimulationOptions& options) {
  return simulate_all(accounting, profile, {plan}, options, 1).front();
}

}  // namespace mlpo::sim
