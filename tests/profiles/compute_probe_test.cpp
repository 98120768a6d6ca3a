// The compute probe (profiles/internal/compute_probe.hpp) runs the executor's own model on the
// CPU backend and returns a figure per repetition, part and pass. Its timing is checked by
// the fidelity benchmark (scripts/bench-memory-wall.sh, docs/benchmarks.md), not here.
#include "profiles/internal/compute_probe.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/model_spec.hpp"
#include "core/thread_pool.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace mlpo::profiles {
namespace {

TEST(ComputeProbe, GivesEveryPartAPositiveRatePerRepetitionAndTellsProgress) {
  ThreadPool pool(2);
  CpuBackend backend(pool);
  ModelSpec spec = find_preset("tiny");
  spec.layers = 7;  // the probe runs three layers of the model's widths, whatever its depth
  int lines = 0;
  const ComputeProbeSamples s =
      probe_model_compute(backend, {spec, 2, 32, 3}, [&](const std::string&) { ++lines; });
  EXPECT_EQ(lines, 3);
  for (const auto* v :
       {&s.layer_forward_gflops, &s.layer_backward_gflops, &s.head_forward_gflops, &s.head_backward_gflops}) {
    ASSERT_EQ(v->size(), 3u);
    for (double x : *v) {
      EXPECT_GT(x, 0);
      EXPECT_LT(x, 1e6);  // GFLOP/s: a bookkeeping slip (seconds for FLOPs) would show here
    }
  }
}

TEST(ComputeProbe, RefusesAShapeTheModelCannotRun) {
  ThreadPool pool(1);
  CpuBackend backend(pool);
  ModelSpec spec = find_preset("tiny");
  spec.ffn_hidden = 0;
  EXPECT_THROW(probe_model_compute(backend, {spec, 1, 16, 1}), Error);
}

}  // namespace
}  // namespace mlpo::profiles
