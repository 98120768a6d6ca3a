// bench_tune: times the tuner and the simulator on the large case the issue names (default:
// mlpo-280b on 8 nodes x 4 GPUs with the example host + NVMe + remote profile):
//   1. the analytic search (tuner/candidate_search.hpp: candidates scored of the grid's space),
//   2. the whole search (mlpo-tune's work, without printing),
//   3. one SimGrid simulation of the chosen plan's iteration (3 runs, each in a fresh child
//      process, wall time including the fork), and of a plan with 1 Mi-element subgroups
//      (the largest event count the search simulates),
//   4. the fork + empty-engine overhead (a tiny model).
// Usage: bench_tune [PROFILE] [MODEL] [NODES] [GPUS_PER_NODE]   (MODEL: a preset or an mlpo.model/1 file)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/model_spec.hpp"
#include "core/units.hpp"
#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/candidate_search.hpp"
#include "tuner/search.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median_simulation_s(const mlpo::Accounting& a, const mlpo::Profile& profile, const mlpo::Plan& plan,
                           double* inside) {
  double runs[3];
  for (double& r : runs) {
    const auto t0 = Clock::now();
    *inside = mlpo::sim::simulate(a, profile, plan, {}).wall_s;
    r = since(t0);
  }
  std::sort(runs, runs + 3);
  return runs[1];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string profile_path = argc > 1 ? argv[1] : "profiles/data/example-cluster-node.json";
  mlpo::tune::TuneRequest request;
  request.model = mlpo::load_model(argc > 2 ? argv[2] : "mlpo-280b");
  request.shape.nodes = argc > 3 ? std::atoll(argv[3]) : 8;
  request.shape.ranks_per_node = argc > 4 ? std::atoll(argv[4]) : 4;
  request.profile = mlpo::load_profile(profile_path);
  const mlpo::Accounting a = mlpo::account(request.model, request.shape);
  std::printf("case: %s on %lld x %lld, profile %s (%zu tiers)\n", request.model.name.c_str(),
              (long long)request.shape.nodes, (long long)request.shape.ranks_per_node, profile_path.c_str(),
              request.profile.tiers.size());

  auto t0 = Clock::now();
  const auto found =
      mlpo::tune::search_candidates(a, request, static_cast<std::size_t>(request.simulate_top));
  const double t_search = since(t0);
  std::printf(
      "analytic search: %zu candidates scored (%zu feasible) of the grid's %.3g in %.3f s (%.1f us each); "
      "%zu finer-search plans beat the grid\n",
      found.scored, found.feasible, found.space, t_search,
      1e6 * t_search / static_cast<double>(std::max<std::size_t>(found.scored, 1)), found.refined);

  t0 = Clock::now();
  const mlpo::tune::TuneResult r = mlpo::tune::tune(request);
  std::printf("full tune: %.2f s (%zu SimGrid runs, %d at a time); chosen iteration %s, baseline %s\n",
              since(t0), r.simulated, request.jobs,
              mlpo::format_seconds(r.chosen.simulated.prediction.iteration_s).c_str(),
              r.baseline ? mlpo::format_seconds(r.baseline->simulated.prediction.iteration_s).c_str() : "-");

  double inside = 0;
  const mlpo::Plan& chosen = r.chosen.plan;
  double wall = median_simulation_s(a, request.profile, chosen, &inside);
  std::printf(
      "one SimGrid simulation of the chosen plan (%lld subgroups per rank, %lld ranks): %.3f s wall, %.3f s "
      "in the child\n",
      (long long)((a.params_per_rank + chosen.subgroup_elements - 1) / chosen.subgroup_elements),
      (long long)request.shape.ranks_per_node, wall, inside);
  mlpo::Plan fine = chosen;
  fine.subgroup_elements = std::int64_t{1} << 20;
  fine.host_cache_subgroups = 0;
  wall = median_simulation_s(a, request.profile, fine, &inside);
  std::printf(
      "one SimGrid simulation, 1 Mi-element subgroups, no cache (%lld subgroups per rank): %.3f s wall, %.3f "
      "s in the child\n",
      (long long)((a.params_per_rank + fine.subgroup_elements - 1) / fine.subgroup_elements), wall, inside);

  mlpo::tune::TuneRequest tiny = request;
  tiny.model = mlpo::find_preset("tiny");
  tiny.shape = mlpo::ClusterShape{};
  const mlpo::Accounting ta = mlpo::account(tiny.model, tiny.shape);
  mlpo::Plan tp = chosen;
  tp.cluster = tiny.shape;
  tp.subgroup_elements = 1 << 16;
  tp.host_cache_subgroups = 0;
  wall = median_simulation_s(ta, request.profile, tp, &inside);
  std::printf("fork + engine overhead (tiny model): %.3f s wall, %.3f s in the child\n", wall, inside);
  return 0;
}
