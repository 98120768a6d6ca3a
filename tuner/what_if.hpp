#pragma once
// WhatIf: `mlpo-tune --what-if EDIT...` — the machine as profiled and the same machine with
// the edits applied (tuner/internal/scenario_edit.hpp: a faster tier, another NVMe, more memory, more
// nodes, a faster network), each tuned from scratch, side by side: the best plan on each and
// its predicted iteration per phase, with the baseline's. Costs two tunes (without the
// ablations): seconds.

#include <optional>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "tuner/internal/scenario_edit.hpp"
#include "tuner/search.hpp"

namespace mlpo::tune {

// One side's tune, or why no plan fits there.
struct TuneOutcome {
  std::optional<TuneResult> result;
  std::string infeasible;  // the search's error when no plan fits
};

struct WhatIf {
  std::vector<std::string> edits;  // as given
  Scenario edited;                 // the machine after the edits (--out-profile writes its profile)
  bool update_only = false;
  TuneOutcome before, after;
};

Scenario scenario_of(const TuneRequest& request);
// `request` on `scenario`'s profile, shape and backbone.
TuneRequest on_scenario(TuneRequest request, const Scenario& scenario);

// Applies `edits` in order to the request's scenario (mlpo::Error naming a bad edit, before
// any tune), then tunes both.
WhatIf what_if(const TuneRequest& request, const std::vector<ScenarioEdit>& edits);

std::string format_what_if(const WhatIf& w);
Json to_json(const WhatIf& w);

}  // namespace mlpo::tune
