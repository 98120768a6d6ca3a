// --validate: reading mlpo-run's JSON-lines log (warm-up skipped, extra fields ignored) and
// holding it against the prediction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "simulator/analytic_model.hpp"
#include "tests/support/sample_inputs.hpp"
#include "tuner/validate_run.hpp"

namespace mlpo::tune {
namespace {

std::string write_log(const std::string& name, const std::vector<std::string>& lines) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
  return path;
}

std::string step(int n, double update, double read_bytes, double backward = 0) {
  return R"({"step":)" + std::to_string(n) + R"(,"loss":null,"update_s":)" + std::to_string(update) +
         R"(,"forward_s":0,"backward_s":)" + std::to_string(backward) +
         R"(,"tiers":[{"name":"nvme","read_bytes":)" + std::to_string(read_bytes) +
         R"(,"write_bytes":1000,"busy_s":1.0,"slot_wait_s":0.1,"queue":"x"}],"cache_hits":0,)"
         R"("prefetch_stall_s":0.5,"bound_s":1.0,"extra":{"a":1}})";
}

// A step line with one more number field.
std::string with_field(std::string line, const std::string& key, double value) {
  return line.insert(line.size() - 1, ",\"" + key + "\":" + std::to_string(value));
}

// What most tests here validate a log against: the `small` preset on one rank of the I/O-bound
// test machine (io_bound_profile), its accounting, and (small_on_nvme) a plan with the whole
// state on that machine's nvme tier.
struct SmallOnIoBoundMachine {
  Profile profile = mlpo::testing::io_bound_profile();
  ModelSpec spec = find_preset("small");
  Accounting a = account(spec, ClusterShape{});
};

Plan small_on_nvme(const Profile& profile, std::int64_t params) {
  return mlpo::testing::plan_for("small", params, 1, 1, {mlpo::testing::plan_tier(profile, "nvme", 1.0)});
}

TEST(ValidateRun, SkipsTheWarmUpStepAndAveragesTheRest) {
  const std::string path = write_log("run1.jsonl", {step(0, 100, 5), step(1, 2, 10), step(2, 4, 30)});
  const MeasuredRun m = read_run_log(path);
  EXPECT_EQ(m.steps_logged, 3u);
  EXPECT_EQ(m.steps_used, 2u);
  EXPECT_DOUBLE_EQ(m.update_s, 3.0);
  ASSERT_EQ(m.tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(m.tiers[0].read_bytes, 20.0);
  EXPECT_DOUBLE_EQ(m.tiers[0].slot_wait_s, 0.1);
}

TEST(ValidateRun, MalformedLineIsAnErrorNamingFileAndLine) {
  const std::string path = write_log("run2.jsonl", {step(0, 1, 1), "{not json"});
  try {
    read_run_log(path);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run2.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(ValidateRun, ComparesUpdateOnlyRunWithTheSimulatedUpdate) {
  const auto [profile, spec, a] = SmallOnIoBoundMachine{};
  Plan plan = small_on_nvme(profile, a.params.total);
  plan.subgroup_elements = 1 << 16;
  // What the simulator predicts, measured 10 % slower.
  const double predicted = 24.0 * static_cast<double>(a.params_per_rank) / 2e9;
  const double measured = predicted * 1.1;
  const std::string path =
      write_log("run3.jsonl", {step(0, 9, 0), step(1, measured, 0), step(2, measured, 0)});
  const ValidationReport r = validate_run(path, plan, profile, spec);
  EXPECT_TRUE(r.update_only);
  const auto row = std::find_if(r.rows.begin(), r.rows.end(),
                                [](const Comparison& c) { return c.quantity == "update_s"; });
  ASSERT_NE(row, r.rows.end());
  EXPECT_NEAR(row->relative_error(), 1 / 1.1 - 1, 0.03);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("update_s"), std::string::npos);
  EXPECT_NE(text.find("%"), std::string::npos);
}

TEST(ValidateRun, HoldsTheRunsAdamWTimeAgainstThePredictionsWhereTheLogHasIt) {
  // adam_s tells a CPU slower than its profile from a slower tier; logs without it (older
  // runs) get no row.
  const auto [profile, spec, a] = SmallOnIoBoundMachine{};
  const Plan plan = small_on_nvme(profile, a.params.total);
  auto with_adam = [](int n, double adam_s) { return with_field(step(n, 1.0, 0), "adam_s", adam_s); };
  const ValidationReport r =
      validate_run(write_log("run-adam.jsonl", {with_adam(0, 9), with_adam(1, 0.2), with_adam(2, 0.4)}), plan,
                   profile, spec);
  const auto row =
      std::find_if(r.rows.begin(), r.rows.end(), [](const Comparison& c) { return c.quantity == "adam_s"; });
  ASSERT_NE(row, r.rows.end());
  EXPECT_NEAR(row->measured, 0.3, 1e-9);
  EXPECT_GT(row->predicted, 0);
  EXPECT_LE(row->predicted, r.predicted.prediction.update_s);
  EXPECT_NE(format_report(r).find("adam_s"), std::string::npos);
  const ValidationReport old =
      validate_run(write_log("run-no-adam.jsonl", {step(0, 9, 0), step(1, 1, 0)}), plan, profile, spec);
  EXPECT_TRUE(std::none_of(old.rows.begin(), old.rows.end(),
                           [](const Comparison& c) { return c.quantity == "adam_s"; }));
}

TEST(ValidateRun, SaysWhenTheHypervisorTookMoreCpuDuringTheRunThanDuringTheProfile) {
  // cpu_steal in the log (mlpo-run's per-step share) against the profile's host.cpu_steal:
  // printed in both outputs; more than 3 points apart is a warning that names the machine,
  // with how much that alone moves CPU-bound phases.
  auto [profile, spec, a] = SmallOnIoBoundMachine{};
  const Plan plan = small_on_nvme(profile, a.params.total);
  auto with_steal = [](int n, double share) { return with_field(step(n, 1.0, 0), "cpu_steal", share); };
  const std::string stolen =
      write_log("run-steal.jsonl", {with_steal(0, 0.9), with_steal(1, 0.15), with_steal(2, 0.25)});
  auto warned = [](const ValidationReport& r) {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
      return w.find("hypervisor took 20.0 %") != std::string::npos;
    });
  };
  profile.host.cpu_steal = 0.0;
  const ValidationReport r = validate_run(stolen, plan, profile, spec);
  ASSERT_TRUE(r.measured.cpu_steal.has_value());
  EXPECT_NEAR(*r.measured.cpu_steal, 0.2, 1e-9);  // steps 1 and 2: the warm-up is skipped
  EXPECT_TRUE(warned(r)) << ::testing::PrintToString(r.warnings);
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("up to 25.0 % slower") != std::string::npos;
  }));
  EXPECT_NE(format_report(r).find("steal): run 20.0 %, profile 0.0 %"), std::string::npos)
      << format_report(r);
  const Json j = to_json(r);
  EXPECT_DOUBLE_EQ(j["cpu_steal"]["profile"].get<double>(), 0.0);
  EXPECT_EQ(j["warnings"].size(), r.warnings.size());
  // A step shorter than a clock tick logs no share: the others are averaged.
  const ValidationReport some = validate_run(
      write_log("run-some-steal.jsonl", {with_steal(0, 0.9), with_steal(1, 0.2), step(2, 1.0, 0)}), plan,
      profile, spec);
  EXPECT_NEAR(some.measured.cpu_steal.value_or(-1), 0.2, 1e-9);
  // A profile that lost as much: no warning; one that lost more: the warning says its figures
  // are low. A log without the field: nothing said.
  profile.host.cpu_steal = 0.18;
  EXPECT_FALSE(warned(validate_run(stolen, plan, profile, spec)));
  EXPECT_TRUE(validate_run(stolen, plan, profile, spec).warnings.size() == r.predicted.warnings.size());
  profile.host.cpu_steal = 0.5;
  const ValidationReport slow_profile = validate_run(stolen, plan, profile, spec);
  EXPECT_TRUE(std::any_of(slow_profile.warnings.begin(), slow_profile.warnings.end(),
                          [](const std::string& w) {
                            return w.find("50.0 % while mlpo-profile") != std::string::npos &&
                                   w.find("figures are up to 37.5 % low") != std::string::npos;
                          }))
      << ::testing::PrintToString(slow_profile.warnings);
  const ValidationReport old =
      validate_run(write_log("run-no-steal.jsonl", {step(0, 9, 0), step(1, 1, 0)}), plan, profile, spec);
  EXPECT_FALSE(old.measured.cpu_steal.has_value());
  EXPECT_TRUE(to_json(old)["cpu_steal"]["run"].is_null());
}

TEST(ValidateRun, HoldsAZeroRunsCollectiveWaitsAndExchangeCpuAgainstTheAnalyticModel) {
  // Two CPU-backend ranks with host MPI figures: the log's gather and drain waits against the
  // exchange schedule's, its exchange thread's CPU against the collectives' core seconds.
  const Profile profile = mlpo::testing::with_host_mpi(mlpo::testing::cpu_model_profile(), 2);
  const ModelSpec spec = find_preset("small");
  const Accounting a = account(spec, ClusterShape{1, 2, 1, 64, 1});
  Plan plan = mlpo::testing::plan_for("small", a.params.total, 1, 2,
                                      {mlpo::testing::plan_tier(profile, "nvme", 1.0)});
  plan.cluster = a.shape;
  auto zero_step = [](int n) {
    return R"({"step":)" + std::to_string(n) +
           R"(,"update_s":1,"forward_s":0.5,"backward_s":1.5,"prefetch_stall_s":0,"cache_hits":0,)"
           R"("gather_wait_s":0.01,"gradient_copy_wait_s":0.03,"exchange_cpu_s":0.02})";
  };
  const ValidationReport r =
      validate_run(write_log("run-zero.jsonl", {zero_step(0), zero_step(1)}), plan, profile, spec);
  const sim::AnalyticBreakdown an = sim::analyze(a, profile, plan, {});
  auto row = [&](const char* q) {
    return std::find_if(r.rows.begin(), r.rows.end(), [q](const Comparison& c) { return c.quantity == q; });
  };
  ASSERT_NE(row("collective_wait_s"), r.rows.end());
  EXPECT_NEAR(row("collective_wait_s")->measured, 0.04, 1e-12);
  EXPECT_DOUBLE_EQ(row("collective_wait_s")->predicted, an.collective_wait_s);
  ASSERT_NE(row("exchange_cpu_s"), r.rows.end());
  EXPECT_NEAR(row("exchange_cpu_s")->measured, 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(row("exchange_cpu_s")->predicted, an.exchange_core_s);
  EXPECT_GT(an.exchange_core_s, 0);
  // One rank's log has no exchange: no rows.
  const ValidationReport one = validate_run(write_log("run-one.jsonl", {step(0, 9, 0), step(1, 1, 0)}),
                                            small_on_nvme(profile, a.params.total), profile, spec);
  EXPECT_TRUE(std::none_of(one.rows.begin(), one.rows.end(),
                           [](const Comparison& c) { return c.quantity == "collective_wait_s"; }));
}

TEST(ValidateRun, UpdateOnlyRunWithGradientPreparationPredictsNoFlushBytes) {
  // mlpo-run --update-only logs making the gradients (and the baseline's flush) as backward;
  // without a forward phase the run is still update-only, and the baseline's predicted tier
  // bytes are the update's alone: 16 B read and 12 B written per element of every subgroup's
  // whole extent (the short last one's too, as the executor moves it).
  const auto [profile, spec, a] = SmallOnIoBoundMachine{};
  Plan plan = small_on_nvme(profile, a.params.total);
  plan.subgroup_elements = 1 << 16;
  plan = mlpo::testing::baseline_of(plan, plan.tiers[0]);
  const std::string path =
      write_log("run5.jsonl", {step(0, 9, 0, 3.0), step(1, 1, 0, 3.0), step(2, 1, 0, 3.0)});
  const ValidationReport r = validate_run(path, plan, profile, spec);
  EXPECT_TRUE(r.update_only);
  ASSERT_EQ(r.predicted.prediction.tiers.size(), 1u);
  const auto subgroups = (a.params_per_rank + plan.subgroup_elements - 1) / plan.subgroup_elements;
  const double elements = static_cast<double>(subgroups * plan.subgroup_elements);
  EXPECT_NEAR(r.predicted.prediction.tiers[0].read_bytes / elements, 16.0, 0.01);
  EXPECT_NEAR(r.predicted.prediction.tiers[0].write_bytes / elements, 12.0, 0.01);
  EXPECT_EQ(r.predicted.prediction.backward_s, 0);
}

TEST(ValidateRun, UpdateOnlyBaselineHoldsItsGradientFlushAgainstTheAnalyticFlush) {
  // The baseline's fp32 flush (gradient_flush_s in the log) against the analytic model's
  // backward flush term, and update + flush, the figure a baseline is compared by; a plan
  // that delays its gradients gets neither row.
  const auto [profile, spec, a] = SmallOnIoBoundMachine{};
  Plan plan = small_on_nvme(profile, a.params.total);
  plan.subgroup_elements = 1 << 16;
  const Plan baseline = mlpo::testing::baseline_of(plan, plan.tiers[0]);
  auto flushed = [](int n, double flush_s) {
    return with_field(step(n, 2.0, 0, 3.0), "gradient_flush_s", flush_s);
  };
  const std::string path = write_log("run-flush.jsonl", {flushed(0, 9), flushed(1, 0.5), flushed(2, 0.7)});
  const ValidationReport r = validate_run(path, baseline, profile, spec);
  auto row = [](const ValidationReport& v, const std::string& q) {
    return std::find_if(v.rows.begin(), v.rows.end(), [&](const Comparison& c) { return c.quantity == q; });
  };
  const auto flush = row(r, "gradient_flush_s");
  ASSERT_NE(flush, r.rows.end());
  EXPECT_NEAR(flush->measured, 0.6, 1e-9);
  // All of the rank's fp32 gradients (4 B each) written to the one tier.
  const double expected = static_cast<double>(a.params_per_rank) * 4 / 2e9;  // nvme writes 2 GB/s
  EXPECT_NEAR(flush->predicted / expected, 1.0, 0.05);
  const auto both = row(r, "update_and_flush_s");
  ASSERT_NE(both, r.rows.end());
  EXPECT_NEAR(both->measured, 2.6, 1e-9);
  EXPECT_NEAR(both->predicted, r.predicted.prediction.update_s + flush->predicted, 1e-9);
  const ValidationReport delayed = validate_run(path, plan, profile, spec);
  EXPECT_EQ(row(delayed, "gradient_flush_s"), delayed.rows.end());
  EXPECT_EQ(row(delayed, "update_and_flush_s"), delayed.rows.end());
}

TEST(ValidateRun, AStepLoggedTwiceIsHeldAgainstThePredictionByItsLastRecord) {
  // Steps 0-2, then a resume from the step-1 checkpoint logs step 2 again: validated as the
  // log that has each step once, with its last record.
  const Profile profile = mlpo::testing::io_bound_profile();
  const ModelSpec spec = find_preset("small");
  const Plan plan = mlpo::testing::plan_for("small", account(spec, ClusterShape{}).params.total, 1, 1,
                                            {mlpo::testing::plan_tier(profile, "nvme", 1.0)});
  const ValidationReport resumed = validate_run(
      write_log("run-resumed.jsonl", {step(0, 9, 5), step(1, 2, 10), step(2, 7, 90), step(2, 4, 30)}), plan,
      profile, spec);
  const ValidationReport once = validate_run(
      write_log("run-once.jsonl", {step(0, 9, 5), step(1, 2, 10), step(2, 4, 30)}), plan, profile, spec);
  EXPECT_EQ(resumed.measured.steps_logged, 3u);
  ASSERT_EQ(resumed.rows.size(), once.rows.size());
  for (std::size_t i = 0; i < once.rows.size(); ++i) {
    EXPECT_EQ(resumed.rows[i].quantity, once.rows[i].quantity);
    EXPECT_DOUBLE_EQ(resumed.rows[i].measured, once.rows[i].measured) << once.rows[i].quantity;
  }
}

TEST(ValidateRun, PlanForAnotherModelIsAnError) {
  const Profile profile = mlpo::testing::io_bound_profile();
  Plan plan = small_on_nvme(profile, 12345);
  const std::string path = write_log("run4.jsonl", {step(0, 1, 0), step(1, 1, 0)});
  EXPECT_THROW(validate_run(path, plan, profile, find_preset("small")), Error);
}

}  // namespace
}  // namespace mlpo::tune
