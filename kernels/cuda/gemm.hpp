#pragma once
// Gemm: the cuBLASLt state of one CudaBackend — a handle, a fixed workspace and, for each
// problem shape, the descriptors and the algorithm chosen for it. The algorithm is asked of
// cuBLASLt's heuristic once per shape and then reused, so a shape always runs the same kernel
// with the same workspace: cuBLAS guarantees bitwise-identical results for that on GPUs of one
// architecture and SM count, which is what keeps the backend deterministic. Keeping the
// descriptors too makes a repeated call cost one cublasLtMatmul (the attention path issues
// dozens per layer).
//
// Errors (a status other than success, no algorithm for a shape) throw gpu::GpuError naming
// the problem: sizes, types, leading dimensions and batch.

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/cuda/device.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::gpu {

// cuBLASLt workspace of every Gemm (some split-K kernels need several MiB).
inline constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;

enum class GemmType : std::uint8_t { bf16, f32 };

// A strided batch: problem i reads A + i * stride_a, B + i * stride_b and writes
// D + i * stride_d (strides in elements). count 1 is a single product.
struct GemmBatch {
  int count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
};

// The GEMM operand type of a storage type (bf16 or f32; anything else is an internal error of `op`).
GemmType gemm_type(DType t, const char* op);

// Throws GpuError naming `what` and the status when a cuBLASLt call failed.
void check_cublaslt(cublasStatus_t status, const std::string& what);

class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Column-major D[m,n] = op(A)[m,k] @ op(B)[k,n] + beta * D, computed in fp32
  // (CUBLAS_COMPUTE_32F, no TF32), for each problem of `batch`. A and B are of `in` type; D
  // is of `out` type. Leading dimensions are those of A, B, D as stored (column-major).
  void run(cudaStream_t stream, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           GemmType in, const void* A, std::int64_t lda, const void* B, std::int64_t ldb, float beta,
           GemmType out, void* D, std::int64_t ldd, const GemmBatch& batch = {});

 private:
  struct Key {
    bool trans_a, trans_b;
    std::int64_t m, n, k, lda, ldb, ldd;
    GemmType in, out;
    bool beta_zero;
    unsigned align_a, align_b, align_d;  // pointer alignment in bytes (power of two, <= 256)
    int batch;
    std::int64_t stride_a, stride_b, stride_d;
    auto operator<=>(const Key&) const = default;
    std::string describe() const;
  };
  struct Plan;  // the descriptors and algorithm of one Key (gemm.cpp)
  const Plan& plan_for(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace mlpo::gpu
