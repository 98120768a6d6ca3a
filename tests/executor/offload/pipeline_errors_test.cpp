// Any error inside UpdatePipeline::update — AdamW's argument check, a callback that throws —
// ends the update with that error: its reader and writer threads are stopped and joined
// (a joinable std::thread destroyed while unwinding would terminate the process) and every
// buffer goes back to the pool.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "offload_test_util.hpp"
#include "pipeline_rig.hpp"

namespace mlpo::offload {

using testing::Rig;

namespace {
// Streamed tier (readers and writers running) and a mapped host tier (the in-place path).
Plan two_tier_plan(const testing::ScratchTiers& dirs) { return dirs.plan(0.5, 2, OrderPolicy::alternating); }
}  // namespace

TEST(UpdatePipelineErrors, BadAdamWArgumentEndsTheUpdateWithItsMessage) {
  testing::ScratchTiers dirs("beta1");
  Rig rig(two_tier_plan(dirs), 8 * 16384);
  rig.step(0);
  for (float beta : {2.0f, std::numeric_limits<float>::quiet_NaN()}) {
    AdamWParams adam;
    adam.step = 2;
    adam.beta1 = beta;
    try {
      rig.step(1, adam);
      FAIL() << "expected an error for beta1 " << beta;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("beta1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(rig.pool.in_use(), 2 * static_cast<std::uint64_t>(rig.layout.extent_bytes()))
        << "only the cache's buffers are still leased";
  }
}

TEST(UpdatePipelineErrors, CallbackThatThrowsStopsReadersAndWriters) {
  testing::ScratchTiers dirs("callback");
  Rig rig(dirs.plan(0.5, 0, OrderPolicy::ascending, 0, 16384, TierKind::other), 8 * 16384);
  int calls = 0;
  try {
    rig.step(0, AdamWParams{}, [&](const Subgroup&) {
      if (++calls == 2) throw std::runtime_error("device copy failed");
    });
    FAIL() << "expected the callback's error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "device copy failed");
  }
  EXPECT_EQ(rig.pool.in_use(), 0u) << "buffers leaked after the error";
}

}  // namespace mlpo::offload
