// Sensitivity: the resource ranked first is the one the analytic model names as the update's
// bound; a slower resource never speeds the kept plan; a move that cannot matter is not
// re-tuned; the tornado chart shows every resource.
#include <gtest/gtest.h>

#include "core/model_spec.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tests/support/update_only_request.hpp"
#include "tuner/sensitivity.hpp"

namespace mlpo::tune {
namespace {

// 6 GiB of host memory: 1b's 12 GiB of state is mostly streamed (I/O bound on tiers).
TuneRequest update_only_on(const std::vector<std::string>& tiers, std::int64_t host_gib = 6) {
  TuneRequest r = mlpo::testing::update_only_request(tiers, host_gib);
  r.simulate_top = 3;
  return r;
}

// "tier nvme time-shared with CPU Adam" -> "nvme".
std::string bound_tier(const std::string& bound) {
  if (bound.rfind("tier ", 0) != 0) return "";
  return bound.substr(5, bound.find(' ', 5) - 5);
}

TEST(Sensitivity, RanksFirstTheTierTheAnalyticModelNamesAsTheBound) {
  const SensitivityResult r = sensitivity(update_only_on({"nvme", "pfs"}), 0.25);
  const std::string tier = bound_tier(r.bound);
  ASSERT_FALSE(tier.empty()) << r.bound;
  ASSERT_FALSE(r.rows.empty());
  EXPECT_EQ(r.rows.front().resource.name.rfind("tier " + tier + " ", 0), 0u) << format_sensitivity(r);
  EXPECT_GT(r.rows.front().impact, 0.05);
}

TEST(Sensitivity, RanksAdamFirstWhenTheUpdateIsAdamBound) {
  const SensitivityResult r = sensitivity(update_only_on({"shm"}, 64), 0.25);
  EXPECT_EQ(r.bound, "CPU Adam");
  ASSERT_FALSE(r.rows.empty());
  EXPECT_EQ(r.rows.front().resource.name, "CPU AdamW") << format_sensitivity(r);
  // Adam-bound: 25 % less Adam is about 1/0.75 = 1.33x the update.
  EXPECT_NEAR(r.rows.front().kept_down.seconds / r.base_s, 1 / 0.75, 0.05);
}

TEST(Sensitivity, ForATrainingIterationRanksFirstTheBoundOfItsLongestPhase) {
  TuneRequest req = update_only_on({"shm"}, 64);
  req.options.update_only = false;
  req.profile.gpus = {mlpo::testing::gpu(2)};
  req.profile.gpus[0].bf16_tflops.median = 50;  // slow GPUs: backward outlasts the in-memory update
  const SensitivityResult r = sensitivity(req, 0.25);
  const Prediction& p = r.prediction;
  ASSERT_GT(p.backward_s, p.update_s) << format_sensitivity(r);
  EXPECT_EQ(r.backward_bound, "GPU compute");
  ASSERT_FALSE(r.rows.empty());
  EXPECT_EQ(r.rows.front().resource.name, "GPU compute") << format_sensitivity(r);
  EXPECT_NE(format_sensitivity(r).find("bound per phase (analytic model, as --explain): forward GPU compute"),
            std::string::npos);
}

TEST(Sensitivity, ASlowerResourceNeverSpeedsTheKeptPlanAndAMoveThatCannotMatterIsNotSearched) {
  TuneRequest req = update_only_on({"nvme"});
  req.profile.tiers.push_back(mlpo::testing::tier("sata", TierKind::other, 0.001, 0.001));
  const SensitivityResult r = sensitivity(req, 0.25);
  bool saw_sata = false;
  for (const SensitivityRow& row : r.rows) {
    if (row.kept_down.fits) {
      EXPECT_GE(row.kept_down.seconds, r.base_s * (1 - 1e-9)) << row.resource.name;
    }
    if (row.resource.name == "tier sata read") {
      saw_sata = true;
      EXPECT_DOUBLE_EQ(row.kept_down.seconds, r.base_s);
      EXPECT_FALSE(row.retuned_down.tuned);  // slower and unused: the best stays the kept plan
      EXPECT_DOUBLE_EQ(row.retuned_down.seconds, r.base_s);
      EXPECT_TRUE(row.retuned_up.tuned);
      EXPECT_LE(row.retuned_up.seconds, row.kept_up.seconds);  // the kept plan is a candidate too
    }
  }
  EXPECT_TRUE(saw_sata);
  EXPECT_GT(r.searches, 1u);
}

TEST(Sensitivity, TheTornadoShowsEveryResourceAndTheJsonEveryRow) {
  const SensitivityResult r = sensitivity(update_only_on({"nvme", "pfs"}), 0.25);
  const std::string svg = tornado_svg(r, "1b <test>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("1b &lt;test&gt;"), std::string::npos);
  for (const SensitivityRow& row : r.rows)
    EXPECT_NE(svg.find(">" + row.resource.name + "<"), std::string::npos);
  const Json j = to_json(r);
  EXPECT_EQ(j.at("resources").size(), r.rows.size());
  EXPECT_EQ(j.at("resources")[0].at("resource").get<std::string>(), r.rows[0].resource.name);
}

}  // namespace
}  // namespace mlpo::tune
