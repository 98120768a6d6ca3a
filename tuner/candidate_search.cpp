#include "tuner/candidate_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/rates.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();
// Finer-search plans passed on besides the grid's best: the analytic model is optimistic for
// shallow pipelines (docs/simulator.md), so the grid's best stay in the SimGrid ranking too.
constexpr std::size_t kRefinedKept = 4;

// What a plan chose, as a string: two plans with the same key are the same candidate.
std::string key_of(const Plan& p) {
  std::string k = std::to_string(p.subgroup_elements) + "/" + std::to_string(p.host_cache_subgroups) + "/" +
                  std::to_string(p.buffers) + "/" + std::to_string(p.prefetch_depth) + "/" +
                  to_string(p.order) + "/" + to_string(p.gradients) + "/" + to_string(p.slot_scope) + "/" +
                  std::to_string(p.io_block_size) + "x" + std::to_string(p.io_queue_depth);
  for (const auto& t : p.tiers) k += "/" + t.name + ":" + std::to_string(t.concurrency_limit);
  return k;
}

// The `keep` best distinct plans seen, best first; ties keep the one seen first.
class BestPlans {
 public:
  explicit BestPlans(std::size_t keep) : keep_(std::max<std::size_t>(keep, 1)) {}
  void offer(const Plan& plan, const sim::AnalyticBreakdown& an, double score) {
    if (plans_.size() == keep_ && score >= plans_.back().score) return;
    const std::string key = key_of(plan);
    for (const auto& p : plans_)
      if (key_of(p.plan) == key) return;
    const auto at = std::upper_bound(plans_.begin(), plans_.end(), score,
                                     [](double s, const ScoredPlan& p) { return s < p.score; });
    plans_.insert(at, ScoredPlan{plan, an, score});
    if (plans_.size() > keep_) plans_.pop_back();
  }
  const std::vector<ScoredPlan>& plans() const { return plans_; }

 private:
  std::size_t keep_;
  std::vector<ScoredPlan> plans_;
};

// The choices of a candidate other than its tiers, limits and gradient policy.
struct Inner {
  std::int64_t subgroup_elements = 0;
  std::int64_t cache = 0;
  std::int64_t buffers = 0;
  std::int64_t prefetch = 0;
  OrderPolicy order = OrderPolicy::alternating;
  SlotScope slot_scope = SlotScope::combined;
  std::int64_t io_block_size = 0;  // 0: the setting plan's (tier_setting_plan)
  std::int64_t io_queue_depth = 0;
};

Inner inner_of(const Plan& p) {
  return Inner{p.subgroup_elements, p.host_cache_subgroups, p.buffers,       p.prefetch_depth, p.order,
               p.slot_scope,        p.io_block_size,        p.io_queue_depth};
}

void apply(const Inner& in, Plan& p) {
  p.subgroup_elements = in.subgroup_elements;
  p.host_cache_subgroups = in.cache;
  p.buffers = in.buffers;
  p.prefetch_depth = in.prefetch;
  p.order = in.order;
  p.slot_scope = in.slot_scope;
  if (in.io_block_size > 0) p.io_block_size = in.io_block_size;
  if (in.io_queue_depth > 0) p.io_queue_depth = in.io_queue_depth;
}

// The bounds of refine's moves around a plan: the grid's subgroup sizes, the step and largest
// size of its finer ones, whether a tier has a concurrency limit (then the slot scope is a
// choice), and the I/O settings every streamed tier measured.
struct RefineSpace {
  std::vector<std::int64_t> grid;
  std::int64_t step = 0, sg_hi = 0;
  bool limited = false;
  std::vector<IoSetting> io_settings;
};

class Search {
 public:
  Search(const Accounting& a, const TuneRequest& r, std::size_t keep, CandidateSearchResult& out)
      : a_(a), r_(r), out_(out), best_(keep), refined_(kRefinedKept) {}

  // Scores one plan whose fractions are filled: its iteration time, or kNone when it does
  // not fit. Offers it to the best plans.
  double score(const Plan& p) {
    ++out_.scored;
    if (refining_) ++out_.scored_finer;
    if (check_fits(a_, p, r_)) return kNone;
    ++out_.feasible;
    sim::AnalyticBreakdown an = sim::analyze(a_, r_.profile, p, r_.options);
    const double s = tune::score(an.prediction);
    (refining_ ? refined_ : best_).offer(p, an, s);
    return s;
  }
  // The setting's plan with `in`'s choices, scored (kNone when its fractions fail).
  double score(const TierSetting& st, const Inner& in) {
    Plan p = tier_setting_plan(a_, r_, st);
    apply(in, p);
    if (!fill_fractions(a_, r_, p)) return kNone;
    return score(p);
  }
  // The largest host cache (in subgroups, at most `subgroups`) with which the setting's plan
  // with `in`'s other choices still fits; `in.cache` when none larger does.
  std::int64_t largest_cache(const TierSetting& st, Inner in, std::int64_t subgroups);
  void setting(TierSetting st);
  void refine(Plan plan);
  void neighbours(const Plan& plan);
  const std::vector<ScoredPlan>& best() const { return best_.plans(); }
  const std::vector<ScoredPlan>& refined() const { return refined_.plans(); }
  void start_refining() { refining_ = true; }

 private:
  // refine's neighbourhood of `cur`, one choice at a time (appended to `trials` in the order
  // they are scored): subgroup sizes, host caches, buffers and prefetch depths, and the
  // policies (update order, slot scope, I/O settings).
  RefineSpace refine_space(const Plan& plan, const TierSetting& st) const;
  void add_size_trials(const Inner& cur, const RefineSpace& space, std::vector<Inner>& trials) const;
  void add_cache_trials(const TierSetting& st, const Inner& cur, std::vector<Inner>& trials);
  void add_pipeline_trials(const TierSetting& st, const Inner& cur, std::vector<Inner>& trials);
  static void add_policy_trials(const Inner& cur, const RefineSpace& space, std::vector<Inner>& trials);
  // The subgroups of a rank's shard at subgroup size `sg`.
  std::int64_t subgroups_at(std::int64_t sg) const { return (a_.params_per_rank + sg - 1) / sg; }

  const Accounting& a_;
  const TuneRequest& r_;
  CandidateSearchResult& out_;
  BestPlans best_;     // the grid's
  BestPlans refined_;  // the finer search's
  bool refining_ = false;
};

std::int64_t Search::largest_cache(const TierSetting& st, Inner in, std::int64_t subgroups) {
  auto fits = [&](std::int64_t cache) {
    Plan p = tier_setting_plan(a_, r_, st);
    in.cache = cache;
    apply(in, p);
    return fill_fractions(a_, r_, p) && !check_fits(a_, p, r_);
  };
  std::int64_t lo = in.cache, hi = subgroups;  // fits(lo) is assumed; find the last c that fits
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// Block coordinate descent over one tier subset and gradient policy (see the header).
void Search::setting(TierSetting st) {
  const std::int64_t R = a_.shape.ranks_per_node;
  std::vector<std::vector<std::int64_t>> values;
  for (std::size_t i = 0; i < st.members.size(); ++i) {
    values.push_back(limit_values(r_.profile, st.members[i], a_.shape));
    // Start from the limit at which the tier alone delivers most.
    const TierProfile& tp = r_.profile.tiers[st.members[i]];
    double most = -1;
    for (std::int64_t k : values.back()) {
      const double bw =
          updated_in_place(tp.kind) ? 0.0 : tier_update_bps(tp, R, node_limit(tp, k, a_.shape.nodes));
      if (bw > most) {
        most = bw;
        st.limits[i] = k;
      }
    }
  }
  for (int round = 0; round < 4; ++round) {
    // 1. The grid's other choices under these limits.
    double best = kNone;
    Inner inner;
    for (const Plan& p : grid_variants(a_, r_, st)) {
      const double s = score(p);
      if (s < best) {
        best = s;
        inner = inner_of(p);
      }
    }
    if (best == kNone) return;
    // 2. The limits, one tier at a time, under those choices.
    bool changed = false;
    for (int pass = 0; pass < 4; ++pass) {
      bool improved = false;
      for (std::size_t i = 0; i < st.members.size(); ++i) {
        for (std::int64_t k : values[i]) {
          if (k == st.limits[i]) continue;
          TierSetting trial = st;
          trial.limits[i] = k;
          const double s = score(trial, inner);
          if (s < best * (1 - 1e-12)) {
            best = s;
            st = trial;
            improved = changed = true;
          }
        }
      }
      if (!improved) break;
    }
    if (!changed) return;
  }
}

// The tier subset, limits and gradient policy of `plan`, as indices into the profile's tiers.
TierSetting setting_of(const Plan& plan, const Profile& profile) {
  TierSetting st;
  for (const auto& t : plan.tiers) {
    for (std::size_t i = 0; i < profile.tiers.size(); ++i)
      if (profile.tiers[i].name == t.name) st.members.push_back(i);
    st.limits.push_back(t.concurrency_limit);
  }
  st.gradients = plan.gradients;
  return st;
}

// Every plan one limit away from `plan`, with its other choices: the near-ties of the best
// plans that the descent, which moves only while it improves, may not have visited.
void Search::neighbours(const Plan& plan) {
  const TierSetting st = setting_of(plan, r_.profile);
  const Inner in = inner_of(plan);
  for (std::size_t i = 0; i < st.members.size(); ++i) {
    for (std::int64_t k : limit_values(r_.profile, st.members[i], a_.shape)) {
      if (k == plan.tiers[i].concurrency_limit) continue;
      TierSetting trial = st;
      trial.limits[i] = k;
      score(trial, in);
    }
  }
}

// Values near `v` on a finer scale than the grid's, in [lo, hi], multiples of `step`.
std::vector<std::int64_t> near(std::int64_t v, std::int64_t lo, std::int64_t hi, std::int64_t step) {
  std::vector<std::int64_t> out;
  for (double f : {0.5, 0.625, 0.75, 0.875, 1.125, 1.25, 1.5, 2.0}) {
    const std::int64_t x = std::clamp(
        static_cast<std::int64_t>(std::llround(static_cast<double>(v) * f / static_cast<double>(step))) *
            step,
        lo, hi);
    if (x != v && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  for (std::int64_t d : {-step, step})
    if (v + d >= lo && v + d <= hi && std::find(out.begin(), out.end(), v + d) == out.end())
      out.push_back(v + d);
  return out;
}

// The buffers and prefetch depths refine tries.
constexpr std::pair<std::int64_t, std::int64_t> kRefinePipelines[] = {
    {2, 1}, {3, 1}, {3, 2}, {4, 2}, {4, 3}, {6, 3}, {6, 4}, {8, 4}, {8, 6}, {12, 6}, {12, 8}, {16, 8}};

RefineSpace Search::refine_space(const Plan& plan, const TierSetting& st) const {
  RefineSpace space;
  space.grid = grid_subgroup_sizes(a_);
  space.step = space.grid.front() >= (std::int64_t{1} << 20) ? std::int64_t{1} << 20 : 1024;
  space.sg_hi = std::max(space.grid.back(), a_.params_per_rank / 8 / space.step * space.step);
  space.limited = std::any_of(plan.tiers.begin(), plan.tiers.end(),
                              [](const PlanTier& t) { return t.concurrency_limit > 0; });
  space.io_settings = common_io_settings(r_.profile, st.members);
  return space;
}

void Search::add_size_trials(const Inner& cur, const RefineSpace& space, std::vector<Inner>& trials) const {
  for (std::int64_t sg : near(cur.subgroup_elements, space.grid.front(),
                              std::max(space.sg_hi, cur.subgroup_elements), space.step)) {
    Inner t = cur;
    t.subgroup_elements = sg;  // the same share of the shard cached
    t.cache = std::min(subgroups_at(sg),
                       static_cast<std::int64_t>(std::llround(
                           static_cast<double>(cur.cache) * static_cast<double>(subgroups_at(sg)) /
                           static_cast<double>(subgroups_at(cur.subgroup_elements)))));
    trials.push_back(t);
  }
}

void Search::add_cache_trials(const TierSetting& st, const Inner& cur, std::vector<Inner>& trials) {
  const std::int64_t n = subgroups_at(cur.subgroup_elements);
  std::vector<std::int64_t> caches = near(cur.cache, 0, n, 1);
  caches.push_back(largest_cache(st, cur, n));
  for (std::int64_t c : {std::int64_t{0}, (n + 63) / 64, (n + 31) / 32, (n + 15) / 16, (n + 7) / 8,
                         (n + 3) / 4, (n + 1) / 2, n})
    if (c != cur.cache) caches.push_back(c);
  for (std::int64_t c : caches) {
    Inner t = cur;
    t.cache = c;
    trials.push_back(t);
  }
}

void Search::add_pipeline_trials(const TierSetting& st, const Inner& cur, std::vector<Inner>& trials) {
  const std::int64_t n = subgroups_at(cur.subgroup_elements);
  for (const auto& [b, d] : kRefinePipelines) {
    Inner t = cur;
    t.buffers = b;
    t.prefetch = d;
    trials.push_back(t);
    // Fewer buffers leave host memory that the cache can take: the joint move, which one
    // choice at a time cannot make (the larger cache alone does not fit).
    if (b < cur.buffers) {
      t.cache = largest_cache(st, t, n);
      if (t.cache > cur.cache) trials.push_back(t);
    }
  }
}

void Search::add_policy_trials(const Inner& cur, const RefineSpace& space, std::vector<Inner>& trials) {
  for (OrderPolicy o : {OrderPolicy::alternating, OrderPolicy::ascending}) {
    Inner t = cur;
    t.order = o;
    trials.push_back(t);
  }
  if (space.limited) {
    Inner t = cur;
    t.slot_scope = cur.slot_scope == SlotScope::combined ? SlotScope::separate : SlotScope::combined;
    trials.push_back(t);
  }
  for (const IoSetting& s : space.io_settings) {  // measured on every streamed tier
    if (s == IoSetting{cur.io_block_size, cur.io_queue_depth}) continue;
    Inner t = cur;
    t.io_block_size = s.block_size;
    t.io_queue_depth = s.queue_depth;
    trials.push_back(t);
  }
}

// Local search around one plan, one choice at a time, while its score improves.
void Search::refine(Plan plan) {
  const TierSetting st = setting_of(plan, r_.profile);
  const RefineSpace space = refine_space(plan, st);
  Inner cur = inner_of(plan);
  double best = score(st, cur);
  if (best == kNone) return;
  auto ascending_partial = [&](const Inner& in) {
    return in.order == OrderPolicy::ascending && in.cache > 0 &&
           in.cache < subgroups_at(in.subgroup_elements);
  };
  for (int pass = 0; pass < 6; ++pass) {
    std::vector<Inner> trials;
    add_size_trials(cur, space, trials);
    add_cache_trials(st, cur, trials);
    add_pipeline_trials(st, cur, trials);
    add_policy_trials(cur, space, trials);
    bool improved = false;
    for (const Inner& t : trials) {
      if (ascending_partial(t)) continue;  // never hits: pure cost
      const double s = score(st, t);
      if (s < best * (1 - 1e-12)) {
        best = s;
        cur = t;
        improved = true;
      }
    }
    if (!improved) break;
  }
}

double grid_space(const Accounting& a, const TuneRequest& r) {
  double inner = 0;
  for (std::int64_t sg : grid_subgroup_sizes(a)) {
    const std::int64_t n = (a.params_per_rank + sg - 1) / sg;
    std::vector<std::int64_t> caches{0, (n + 15) / 16, (n + 3) / 4, n};
    caches.erase(std::unique(caches.begin(), caches.end()), caches.end());
    inner += 3.0 * (static_cast<double>(caches.size()) + (caches.back() > 0 ? 2.0 : 1.0));
  }
  double limits = 1;  // the product over tiers of (1 + choices): subsets with their limit combinations
  for (std::size_t t = 0; t < r.profile.tiers.size(); ++t)
    limits *= 1.0 + static_cast<double>(limit_values(r.profile, t, a.shape).size());
  return (limits - 1) * 2 * inner;
}

}  // namespace

CandidateSearchResult search_candidates(const Accounting& a, const TuneRequest& request, std::size_t keep,
                                        bool refine) {
  CandidateSearchResult out;
  out.space = grid_space(a, request);
  Search search(a, request, std::max<std::size_t>(keep, 8), out);
  const std::size_t T = request.profile.tiers.size();
  for (std::uint32_t subset = 1; subset < (1u << T); ++subset) {
    for (GradientPolicy grads : {GradientPolicy::delayed, GradientPolicy::flush_fp32}) {
      TierSetting st;
      for (std::size_t t = 0; t < T; ++t)
        if (subset & (1u << t)) st.members.push_back(t);
      st.limits.assign(st.members.size(), 0);
      st.gradients = grads;
      search.setting(st);
    }
  }
  // The best plans' limit neighbours, until the best `keep` stop changing.
  for (int round = 0; round < 3; ++round) {
    const std::vector<ScoredPlan> before = search.best();
    for (std::size_t i = 0; i < before.size() && i < keep; ++i) search.neighbours(before[i].plan);
    bool same = search.best().size() == before.size();
    for (std::size_t i = 0; same && i < before.size(); ++i)
      same = key_of(search.best()[i].plan) == key_of(before[i].plan);
    if (same) break;
  }
  std::vector<ScoredPlan> best = search.best();
  if (best.size() > keep) best.resize(keep);
  if (refine && !best.empty()) {
    const double grid_best = best.front().score;
    std::vector<Plan> seeds;
    for (std::size_t i = 0; i < best.size() && i < 4; ++i) seeds.push_back(best[i].plan);
    search.start_refining();
    for (const Plan& p : seeds) search.refine(p);
    // The finer search's plans strictly better than every grid plan join the grid's best.
    for (const ScoredPlan& p : search.refined()) {
      if (p.score >= grid_best * (1 - 1e-12)) continue;
      ++out.refined;
      best.push_back(p);
    }
    std::stable_sort(best.begin(), best.end(),
                     [](const ScoredPlan& x, const ScoredPlan& y) { return x.score < y.score; });
  }
  out.best = std::move(best);
  return out;
}

ScoredPlan exhaustive_best(const Accounting& a, const TuneRequest& request) {
  ScoredPlan best;
  best.score = kNone;
  for (const Plan& p : candidate_plans(a, request)) {
    if (check_fits(a, p, request)) continue;
    sim::AnalyticBreakdown an = sim::analyze(a, request.profile, p, request.options);
    const double s = score(an.prediction);
    if (s < best.score) best = ScoredPlan{p, std::move(an), s};
  }
  return best;
}

}  // namespace mlpo::tune
