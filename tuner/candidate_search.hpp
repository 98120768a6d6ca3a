#pragma once
// CandidateSearch: the analytic half of the tuner's search, without enumerating the plan
// space (every tier subset x every limit combination is 10^8 plans at 8 tiers and 8 ranks
// per node). For each tier subset and gradient policy it alternates two steps until neither
// changes the setting (block coordinate descent under the analytic model):
//   1. the grid's subgroup size x pipeline x order x cache for the current limits, all scored;
//   2. the limits, one tier at a time over 1..R and none, under the best of step 1's choices,
//      starting from each tier's limit alone (the one that maximises its bandwidth).
// Then a finer local search around the best plans: subgroup sizes between the grid's (1 Mi
// steps), cache sizes between its points, more (buffers, prefetch) pairs and the slot scope
// (combined / separate), one dimension at a time while the score improves. Its plans that
// beat every grid plan are passed on beside the grid's best, not instead of them: the
// analytic model is optimistic for shallow pipelines, so SimGrid decides between them.
// Cost: per subset about (grid variants + limits x tiers x passes) analytic scores — some
// 10^5 at 8 tiers and 8 ranks, seconds — and memory for the `keep` best plans only.
// On the grid it finds the exhaustive search's best score (test: CandidateSearch.*).

#include <cstddef>
#include <vector>

#include "simulator/analytic_model.hpp"
#include "tuner/plan_space.hpp"

namespace mlpo::tune {

struct ScoredPlan {
  Plan plan;
  sim::AnalyticBreakdown analytic;
  double score = 0;
};

struct CandidateSearchResult {
  std::vector<ScoredPlan> best;  // the grid's `keep` best distinct feasible plans and up to 4 of the
                                 // finer search's that beat them all; best first
  std::size_t scored = 0;        // candidates scored with the analytic model (grid and finer search;
                                 // the coordinate search counts a grid point each time it visits it)
  std::size_t scored_finer = 0;  // of them, those the finer search scored
  std::size_t feasible = 0;      // of them, those that fit every constraint
  double space = 0;              // size of the grid's exhaustive space (not enumerated)
  std::size_t refined = 0;       // plans found by the finer search better than every grid plan
};

// `refine` false: the grid's space only (what the exhaustive comparison uses).
CandidateSearchResult search_candidates(const Accounting& a, const TuneRequest& request, std::size_t keep,
                                        bool refine = true);

// The grid's best plan by exhaustive enumeration (candidate_plans, every one scored): for
// small cases and tests only.
ScoredPlan exhaustive_best(const Accounting& a, const TuneRequest& request);

}  // namespace mlpo::tune
