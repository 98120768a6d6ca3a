#pragma once
// Shared pieces of the CUDA tests: a fixture that skips (with the reason) where no GPU is
// usable, and GpuRunner: the BackendRunner of tests/kernels/ops_test_util.hpp over a CudaBackend
// (the GPU twin of OpRunner), whose inputs, error measure and tolerances these tests reuse.
//
// What is compared: each CUDA op against the CPU backend's same op on the same inputs (already
// rounded to the storage type). Tolerances are those of the CPU-vs-reference tests, which
// bound the distance of each backend from the exact result: bf16 1e-2 (outputs rounded to bf16
// once; the two backends' fp32 results differ in summation order and FMA contraction, which
// moves a rounded output by at most one bf16 ulp, 2^-8 relative, ~4e-3 of the largest
// element), f32 3e-5 (fp32 accumulation in a different order over at most a few hundred
// terms). Ops whose arithmetic is the same sequence on both (casts, embedding gather and
// scatter-add) must match bitwise.

#include <gtest/gtest.h>

#include <memory>

#include "kernels/cuda/cuda_backend.hpp"
#include "tests/kernels/ops_test_util.hpp"

namespace mlpo::testing {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaAvailability status = cuda_available();
    if (!status.available) GTEST_SKIP() << "skipped: " << status.reason;
  }
};

// The CUDA backend under a BackendRunner (construct inside a CudaTest, which skips without a GPU).
class GpuRunner : public BackendRunner {
 public:
  explicit GpuRunner(CudaBackendOptions options = {})
      : BackendRunner(nullptr, std::make_unique<CudaBackend>(0, options)) {}
};

// Both attention paths, for tests that run each.
inline constexpr AttentionPath kAttentionPaths[] = {AttentionPath::gemm, AttentionPath::fused};

}  // namespace mlpo::testing
