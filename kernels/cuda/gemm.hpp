#pragma once
// Gemm: the cuBLASLt state of one CudaBackend — a handle, a fixed workspace and the algorithm
// chosen for each problem shape. The algorithm is asked of cuBLASLt's heuristic once per
// shape and then reused, so a shape always runs the same kernel with the same workspace:
// cuBLAS guarantees bitwise-identical results for that on GPUs of one architecture and SM
// count, which is what keeps the backend deterministic.

#include <cublasLt.h>

#include <cstdint>
#include <map>

#include "kernels/cuda/device.hpp"

namespace mlpo::gpu {

// cuBLASLt workspace of every Gemm (some split-K kernels need several MiB).
inline constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;

enum class GemmType : std::uint8_t { bf16, f32 };

class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Column-major D[m,n] = op(A)[m,k] @ op(B)[k,n] + beta * D, computed in fp32
  // (CUBLAS_COMPUTE_32F, no TF32). A and B are of `in` type; D is of `out` type. Leading
  // dimensions are those of A, B, D as stored (column-major).
  void run(cudaStream_t stream, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           GemmType in, const void* A, std::int64_t lda, const void* B, std::int64_t ldb, float beta,
           GemmType out, void* D, std::int64_t ldd);

 private:
  struct Key {
    bool trans_a, trans_b;
    std::int64_t m, n, k, lda, ldb, ldd;
    GemmType in, out;
    bool beta_zero;
    unsigned align_a, align_b, align_d;  // pointer alignment in bytes (power of two, <= 256)
    auto operator<=>(const Key&) const = default;
  };
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<Key, cublasLtMatmulAlgo_t> algos_;
};

}  // namespace mlpo::gpu
