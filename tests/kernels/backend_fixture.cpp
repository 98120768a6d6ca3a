#include "tests/kernels/backend_fixture.hpp"

#if MLPO_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace mlpo::testing {

std::string backend_unavailable(BackendKind kind) {
  if (kind == BackendKind::cpu) return "";
#if MLPO_HAVE_CUDA
  const CudaAvailability status = cuda_available();
  return status.available ? "" : status.reason;
#else
  return "the CUDA backend was not built (no nvcc when the project was configured)";
#endif
}

void BackendOps::SetUp() {
  const BackendKind kind = GetParam();
  if (const std::string reason = backend_unavailable(kind); !reason.empty())
    GTEST_SKIP() << "skipped: " << reason;
  if (kind == BackendKind::cpu) {
    runner_ = std::make_unique<BackendRunner>(cpu_runner(2, cpu::GemmPath::blas));
    return;
  }
#if MLPO_HAVE_CUDA
  const AttentionPath path = kind == BackendKind::cuda_gemm ? AttentionPath::gemm : AttentionPath::fused;
  runner_ =
      std::make_unique<BackendRunner>(nullptr, std::make_unique<CudaBackend>(0, CudaBackendOptions{path}));
#endif
}

std::span<const DType> BackendOps::storage_types() const {
  if (GetParam() == BackendKind::cpu) return kStorageTypes;
  return kGpuStorageTypes;
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOps,
                         ::testing::Values(BackendKind::cpu, BackendKind::cuda_gemm, BackendKind::cuda_fused),
                         [](const ::testing::TestParamInfo<BackendKind>& info) {
                           return std::string(backend_name(info.param));
                         });

}  // namespace mlpo::testing
