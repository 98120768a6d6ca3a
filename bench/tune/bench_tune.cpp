// bench_tune: times the tuner and the simulator on a large case (default: mlpo-280b on
// 8 nodes x 4 GPUs with the example host + NVMe + remote profile): candidate generation,
// analytic scoring of every feasible candidate, one SimGrid simulation of the chosen plan,
// and the whole search. Usage: bench_tune [PROFILE] [MODEL] [NODES] [GPUS_PER_NODE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/model_spec.hpp"
#include "core/units.hpp"
#include "simulator/analytic_model.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/search.hpp"

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string profile_path = argc > 1 ? argv[1] : "profiles/data/example-cluster-node.json";
  mlpo::tune::TuneRequest request;
  request.model = mlpo::find_preset(argc > 2 ? argv[2] : "mlpo-280b");
  request.shape.nodes = argc > 3 ? std::atoll(argv[3]) : 8;
  request.shape.gpus_per_node = argc > 4 ? std::atoll(argv[4]) : 4;
  request.profile = mlpo::load_profile(profile_path);
  const mlpo::Accounting a = mlpo::account(request.model, request.shape);
  std::printf("case: %s on %lld x %lld, profile %s (%zu tiers)\n", request.model.name.c_str(), (long long)request.shape.nodes,
              (long long)request.shape.gpus_per_node, profile_path.c_str(), request.profile.tiers.size());

  auto t0 = std::chrono::steady_clock::now();
  const auto candidates = mlpo::tune::candidate_plans(a, request);
  const double t_gen = since(t0);
  t0 = std::chrono::steady_clock::now();
  std::size_t feasible = 0;
  double best = 1e300;
  mlpo::Plan best_plan;
  for (const auto& p : candidates) {
    if (mlpo::tune::check_fits(a, p, request)) continue;
    ++feasible;
    const double s = mlpo::sim::analyze(a, request.profile, p, request.options).prediction.iteration_s;
    if (s < best) {
      best = s;
      best_plan = p;
    }
  }
  const double t_analytic = since(t0);
  std::printf("candidates: %zu generated in %.3f s; %zu feasible scored analytically in %.3f s (%.1f us each)\n", candidates.size(),
              t_gen, feasible, t_analytic, 1e6 * t_analytic / static_cast<double>(feasible));

  if (const char* sg = std::getenv("MLPO_BENCH_SUBGROUP")) best_plan.subgroup_elements = std::atoll(sg);
  if (std::getenv("MLPO_BENCH_ONLY_ONE")) request.simulate_top = 0;
  t0 = std::chrono::steady_clock::now();
  const mlpo::sim::SimulationResult one = mlpo::sim::simulate(a, request.profile, best_plan, request.options);
  const double t_one = since(t0);
  const std::int64_t subgroups = (a.params_per_rank + best_plan.subgroup_elements - 1) / best_plan.subgroup_elements;
  std::printf("one SimGrid simulation (best analytic plan, %lld subgroups per rank, %lld ranks simulated): %.3f s wall "
              "(%.3f s inside the child); predicted iteration %s, analytic %s\n",
              (long long)subgroups, (long long)request.shape.gpus_per_node, t_one, one.wall_s,
              mlpo::format_seconds(one.prediction.iteration_s).c_str(), mlpo::format_seconds(best).c_str());

  if (request.simulate_top == 0) return 0;
  t0 = std::chrono::steady_clock::now();
  const mlpo::tune::TuneResult r = mlpo::tune::tune(request);
  std::printf("full tune: %.2f s (%zu candidates, %zu feasible, %zu SimGrid runs); chosen iteration %s\n", since(t0), r.candidates,
              r.feasible, r.simulated, mlpo::format_seconds(r.chosen.simulated.prediction.iteration_s).c_str());
  return 0;
}
