#include "simulator/internal/exchange_schedule.hpp"

#include <algorithm>
#include <utility>

#include "core/accounting.hpp"

namespace mlpo::sim {

double CollectiveCost::gather_s(double elements) const {
  return latency_s + elements * kBf16Bytes * (ranks - 1) / ranks / all_gather_bps;
}

double CollectiveCost::reduce_scatter_s(double elements) const {
  return latency_s + elements * kFp32GradBytes * (ranks - 1) / ranks / reduce_scatter_bps;
}

double CollectiveCost::to_device_s(double elements) const {
  return h2d_bps > 0 ? elements * kBf16Bytes / h2d_bps : 0.0;
}

double CollectiveCost::to_host_s(double elements) const {
  return d2h_bps > 0 ? elements * kFp32GradBytes / d2h_bps : 0.0;
}

double CollectiveCost::core_seconds(double seconds) const {
  return on_compute_cores && seconds > 0 ? std::max(0.0, seconds - latency_s) : 0.0;
}

CollectiveCost collective_cost_of(const Rates& rates, const Workload& w) {
  return CollectiveCost{static_cast<double>(w.ranks), rates.all_gather_bps, rates.reduce_scatter_bps,
                        rates.collective_latency_s,   rates.h2d_bps,        rates.d2h_bps,
                        !rates.compute_on_gpu};
}

namespace {

// --param-offload on the CPU backend: the part's bf16 weights copied before it runs.
double weight_copy_s(const ComputeRates& compute, const LayerWork& l) {
  return compute.weight_copy_bps > 0 ? l.weight_elements * kBf16Bytes / compute.weight_copy_bps : 0.0;
}

}  // namespace

std::vector<PassPart> forward_parts(const Workload& w, const ComputeRates& compute, const CollectiveCost& c) {
  std::vector<PassPart> parts;
  for (const LayerWork& l : w.layers) {
    PassPart p{&l, compute.seconds(l.part, false, l.forward_flops) + weight_copy_s(compute, l), -1.0, -1.0};
    if (c.modelled()) {
      p.gather_s = c.gather_s(l.weight_elements);
      p.to_device_s = c.to_device_s(l.weight_elements);
    }
    parts.push_back(p);
  }
  return parts;
}

std::vector<PassPart> backward_parts(const Workload& w, const ComputeRates& compute, const CollectiveCost& c,
                                     bool last_micro_step) {
  std::vector<PassPart> parts;
  bool last_layer = true;  // the first block met in reverse
  for (auto l = w.layers.rbegin(); l != w.layers.rend(); ++l) {
    PassPart p{&*l, compute.seconds(l->part, true, l->backward_flops), -1.0, -1.0};
    if (l->part == ComputePart::layer && std::exchange(last_layer, false) &&
        compute.last_layer_skips_recompute)
      p.compute_s = std::max(0.0, p.compute_s - compute.seconds(l->part, false, l->forward_flops));
    if (l->gathered_in_backward) p.compute_s += weight_copy_s(compute, *l);
    if (c.modelled()) {
      if (l->gathered_in_backward) {
        p.gather_s = c.gather_s(l->weight_elements);
        p.to_device_s = c.to_device_s(l->weight_elements);
      }
      if (last_micro_step) {
        p.reduce_scatter_s = c.reduce_scatter_s(l->grad_elements * c.ranks);
        p.to_host_s = c.to_host_s(l->grad_elements * c.ranks);
      }
    }
    parts.push_back(p);
  }
  return parts;
}

std::size_t next_gathered(const std::vector<PassPart>& parts, std::size_t i) {
  for (std::size_t j = i + 1; j < parts.size(); ++j)
    if (parts[j].gather_s >= 0) return j;
  return parts.size();
}

double pass_seconds(const std::vector<PassPart>& parts) {
  std::vector<double> gathered(parts.size(), 0.0);  // when each part's gather completes
  std::vector<double> scattered;                    // when each reduce-scatter completes
  double exchange_free = 0;                         // the exchange thread's queue drains
  double t = 0;                                     // the rank's compute clock
  auto queue = [&exchange_free](double at, double seconds) {
    exchange_free = std::max(exchange_free, at) + seconds;
    return exchange_free;
  };
  if (const std::size_t first = next_gathered(parts, static_cast<std::size_t>(-1)); first < parts.size())
    gathered[first] = queue(0, parts[first].gather_s);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PassPart& p = parts[i];
    if (p.gather_s >= 0) t = std::max(t, gathered[i]);  // acquire: wait for its weights
    if (const std::size_t j = next_gathered(parts, i); j < parts.size() && p.gather_s >= 0)
      gathered[j] = queue(t, parts[j].gather_s);  // and start gathering the next part
    t += p.to_device_s;
    t += p.compute_s;
    if (p.reduce_scatter_s < 0) continue;
    if (scattered.size() >= 2) t = std::max(t, scattered[scattered.size() - 2]);  // its staging buffer
    t += p.to_host_s;
    scattered.push_back(queue(t, p.reduce_scatter_s));
  }
  if (!scattered.empty()) t = std::max(t, scattered.back());  // drain before the update
  return t;
}

double pass_work_s(const std::vector<PassPart>& parts) {
  double s = 0;
  for (const PassPart& p : parts) s += p.compute_s + p.to_device_s + p.to_host_s;
  return s;
}

double pass_core_seconds(const std::vector<PassPart>& parts, const CollectiveCost& c) {
  double s = 0;
  for (const PassPart& p : parts) s += c.core_seconds(p.gather_s) + c.core_seconds(p.reduce_scatter_s);
  return s;
}

double pass_seconds(const std::vector<PassPart>& parts, const CollectiveCost& c) {
  const double scheduled = pass_seconds(parts);
  if (!c.on_compute_cores) return scheduled;
  double serial = pass_work_s(parts) + pass_core_seconds(parts, c);
  if (const std::size_t first = next_gathered(parts, static_cast<std::size_t>(-1)); first < parts.size())
    serial += parts[first].gather_s - c.core_seconds(parts[first].gather_s);
  return std::max(scheduled, serial);
}

double small_collectives_s(const CollectiveCost& c) { return c.modelled() ? 2 * c.latency_s : 0.0; }

}  // namespace mlpo::sim
