#pragma once
// BackendOps: the one fixture of the op tests, value-parametrized by backend. Each TEST_P runs
// on the CPU backend and on the CUDA backend with each attention path (kernels/
// attention_path.hpp); the CUDA cases skip, saying why, where the CUDA backend was not built or
// no GPU is usable (backend_fixture.cpp instantiates all three). runner()
// moves std::vector<double> in and out of the backend under test; storage_types() lists the
// types it stores (the CPU's test-only f64 too). Every backend is held to the same distance
// from the double reference (tolerances in ops_test_util.hpp).

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <span>
#include <string>

#include "tests/kernels/ops_test_util.hpp"

namespace mlpo::testing {

enum class BackendKind { cpu, cuda_gemm, cuda_fused };
inline const char* backend_name(BackendKind kind) {
  return kind == BackendKind::cpu         ? "Cpu"
         : kind == BackendKind::cuda_gemm ? "CudaGemmAttention"
                                          : "CudaFusedAttention";
}
inline void PrintTo(BackendKind kind, std::ostream* os) { *os << backend_name(kind); }  // for test names

// Why `kind` cannot run here; empty when it can.
std::string backend_unavailable(BackendKind kind);

class BackendOps : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override;
  BackendRunner& runner() { return *runner_; }
  std::span<const DType> storage_types() const;

 private:
  std::unique_ptr<BackendRunner> runner_;
};

}  // namespace mlpo::testing
