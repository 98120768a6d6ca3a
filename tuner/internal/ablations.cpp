#include "tuner/internal/ablations.hpp"

#include <utility>

#include "core/units.hpp"
#include "simulator/iteration_model.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

namespace {

// The ablations of `best` and the plans to simulate for them, built in principle order.
class AblationSet {
 public:
  AblationSet(const Accounting& a, const TuneRequest& request) : a_(a), request_(request) {}

  // A principle the plan uses (`uses`) is simulated as `p` unless `p` does not fit; one it
  // does not use is reported with `unused` as the reason.
  void add(const char* principle, std::string change, const char* unused, bool uses, Plan p) {
    Ablation ab{principle, std::move(change), uses, 0, uses ? "" : unused};
    if (uses) {
      if (auto short_of = check_fits(a_, p, request_)) {
        ab.applies = false;
        ab.why_not = "switching it off does not fit: " + short_of->resource + " short by " +
                     format_bytes(short_of->need - short_of->have);
      }
    }
    items.push_back({std::move(ab), std::move(p)});
  }

  // The plan's fastest tier alone (the first whose capacity can hold all the state).
  void add_single_tier(const Plan& best) {
    Plan p = best;
    std::string alone;
    for (const auto& t : best.tiers) {
      Plan single = best;
      single.tiers = {t};
      single.tiers[0].fraction = 1.0;
      if (!check_fits(a_, single, request_)) {
        p = single;
        alone = t.name;
        break;
      }
    }
    if (alone.empty()) {
      items.push_back({Ablation{"multi-path tiers", "one tier", false, 0,
                                best.tiers.size() > 1 ? "no single tier of the plan can hold all the state"
                                                      : "the plan uses one tier"},
                       best});
    } else {
      add("multi-path tiers", alone + " alone", "the plan uses one tier", best.tiers.size() > 1, p);
    }
  }

  std::vector<std::pair<Ablation, Plan>> items;

 private:
  const Accounting& a_;
  const TuneRequest& request_;
};

}  // namespace

std::vector<Ablation> simulate_ablations(const Accounting& a, const TuneRequest& request, const Plan& best,
                                         std::size_t& simulated) {
  AblationSet set(a, request);
  set.add_single_tier(best);
  {
    Plan p = best;
    bool limited = false;
    for (auto& t : p.tiers) {
      limited |= t.concurrency_limit > 0;
      t.concurrency_limit = 0;
    }
    set.add("concurrency limit", "no limit", "the plan sets no limit", limited, p);
  }
  {
    Plan p = best;
    p.order = OrderPolicy::ascending;
    p.host_cache_subgroups = 0;
    set.add("cache-friendly order", "ascending, no cache", "the plan uses no cache",
            best.order == OrderPolicy::alternating && best.host_cache_subgroups > 0, p);
  }
  {
    Plan p = best;
    p.gradients = GradientPolicy::flush_fp32;
    set.add("delayed gradients", "fp32 gradients flushed and re-read", "the plan flushes fp32 gradients",
            best.gradients == GradientPolicy::delayed, p);
  }
  {
    Plan p = best;
    p.buffers = 2;
    p.prefetch_depth = 1;
    set.add("overlap", "prefetch depth 1, 2 buffers", "the plan already uses depth 1",
            best.prefetch_depth > 1, p);
  }
  std::vector<Plan> plans;
  for (const auto& [ab, p] : set.items)
    if (ab.applies) plans.push_back(p);
  const std::vector<sim::SimulationResult> sims =
      sim::simulate_all(a, request.profile, plans, request.options, request.jobs);
  simulated += sims.size();
  std::vector<Ablation> out;
  std::size_t next = 0;
  for (auto& [ab, p] : set.items) {
    if (ab.applies) ab.seconds = score(sims[next++].prediction);
    out.push_back(ab);
  }
  return out;
}

Json to_json(const std::vector<Ablation>& ablations) {
  Json abl = Json::array();
  for (const auto& ab : ablations)
    abl.push_back(ab.applies
                      ? Json{{"principle", ab.principle}, {"without", ab.change}, {"predicted_s", ab.seconds}}
                      : Json{{"principle", ab.principle}, {"not_simulated", ab.why_not}});
  return abl;
}

}  // namespace mlpo::tune
