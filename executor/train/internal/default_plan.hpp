#pragma once
// The plan `mlpo-run` makes when it is given none, so training needs no other input: one
// file tier named "disk" at <state_dir> (default ./mlpo-state, created if missing) holding
// every subgroup, subgroups of min(4M, ceil(params / 8) rounded up to 4096) elements, a host
// cache of 2 subgroups with the alternating order (the first two subgroups of every
// iteration after the first are cache hits), 4 buffers, prefetch depth 2, buffered I/O
// (O_DIRECT is refused by some file systems; the tier engine falls back with a warning
// anyway), delayed bf16 gradients. It is a reasonable plan, not a tuned one: `mlpo-tune`
// makes a measured one.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/plan.hpp"

namespace mlpo::train {

Plan default_plan(const ModelSpec& model, std::int64_t params, const std::string& state_dir);

// What mlpo-run prints about the default plan it uses: three lines (the tier, the pipeline,
// where to go from here), not the plan's JSON (--save-plan writes that).
std::vector<std::string> default_plan_summary(const Plan& plan);

}  // namespace mlpo::train
