// Linear layers without bias, out = x @ w^T with w stored [out_features, in_features], as GEMMs
// through cuBLASLt: bf16 (or f32) operands, fp32 accumulation (CUBLAS_COMPUTE_32F, never TF32),
// one rounding to the output type. Weight gradients are fp32 and accumulated in place
// (beta = 1) from bf16 operands (cuBLASLt's BF16-in / FP32-out case).
//
// Row-major vs column-major: cuBLAS is column-major, and a row-major [r, c] matrix is the
// column-major [c, r] matrix (its transpose) with leading dimension c. So each row-major product
// is issued as its transpose, operands swapped:
//   forward   out[N,O] = x[N,I] w[O,I]^T    ->  out^T[O,N] = op_T(w: col [I,O]) x^T(col [I,N])
//   dx        dx[N,I]  = dout[N,O] w[O,I]   ->  dx^T[I,N]  = w^T(col [I,O]) dout^T(col [O,N])
//   dw        dw[O,I] += dout^T[O,N] x[N,I] ->  dw^T[I,O] += x^T(col [I,N]) op_T(dout: col [O,N])
// Tuned for: nothing by hand — cuBLASLt's heuristic picks the kernel per shape (once, cached in
// Gemm), told each pointer's real alignment since parameter slices of the flat weight buffer
// are not all 256-byte aligned.
#include <cublasLt.h>

#include "kernels/cuda/cublaslt_api.hpp"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

void lt_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    check_failed("CUBLAS_STATUS_SUCCESS", __FILE__, __LINE__,
                 std::string(what) + ": " + cublaslt().cublasLtGetStatusString(status));
}

cudaDataType_t cuda_type(GemmType t) { return t == GemmType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }

unsigned alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  unsigned align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

// The descriptors of one call, destroyed on scope exit.
struct MatmulDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  ~MatmulDescriptors() {
    if (d) cublaslt().cublasLtMatrixLayoutDestroy(d);
    if (b) cublaslt().cublasLtMatrixLayoutDestroy(b);
    if (a) cublaslt().cublasLtMatrixLayoutDestroy(a);
    if (op) cublaslt().cublasLtMatmulDescDestroy(op);
  }
};

GemmType gemm_type(DType t, const char* op) {
  if (t == DType::bf16) return GemmType::bf16;
  if (t == DType::f32) return GemmType::f32;
  MLPO_CHECK(false, std::string(op) + ": the CUDA backend stores bf16 or f32, got " + dtype_name(t));
  return GemmType::f32;
}

}  // namespace

Gemm::Gemm() {
  lt_check(cublaslt().cublasLtCreate(&handle_), "cublasLtCreate");
  check_allocation(cudaMalloc(&workspace_, kGemmWorkspaceBytes), kGemmWorkspaceBytes,
                   "the cuBLASLt workspace");
  workspace_bytes_ = kGemmWorkspaceBytes;
}

Gemm::~Gemm() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublaslt().cublasLtDestroy(handle_);
}

void Gemm::run(cudaStream_t stream, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, GemmType in, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
               float beta, GemmType out, void* D, std::int64_t ldd) {
  if (m == 0 || n == 0) return;
  MatmulDescriptors desc;
  lt_check(cublaslt().cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
           "cublasLtMatmulDescCreate");
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt_check(
      cublaslt().cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
      "TRANSA");
  lt_check(
      cublaslt().cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
      "TRANSB");
  const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
  lt_check(cublaslt().cublasLtMatrixLayoutCreate(&desc.a, cuda_type(in), u(trans_a ? k : m),
                                                 u(trans_a ? m : k), lda),
           "layout A");
  lt_check(cublaslt().cublasLtMatrixLayoutCreate(&desc.b, cuda_type(in), u(trans_b ? n : k),
                                                 u(trans_b ? k : n), ldb),
           "layout B");
  lt_check(cublaslt().cublasLtMatrixLayoutCreate(&desc.d, cuda_type(out), u(m), u(n), ldd), "layout D");

  const Key key{
      trans_a,         trans_b,        m, n, k, lda, ldb, ldd, in, out, beta == 0.0f, alignment_of(A),
      alignment_of(B), alignment_of(D)};
  auto found = algos_.find(key);
  if (found == algos_.end()) {
    cublasLtMatmulPreference_t pref = nullptr;
    lt_check(cublaslt().cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const std::uint32_t align_a = key.align_a, align_b = key.align_b, align_d = key.align_d;
    const std::uint64_t workspace = workspace_bytes_;
    cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof workspace);
    cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                    &align_a, sizeof align_a);
    cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                    &align_b, sizeof align_b);
    cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                    &align_d, sizeof align_d);
    cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                    &align_d, sizeof align_d);
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    const cublasStatus_t status = cublaslt().cublasLtMatmulAlgoGetHeuristic(
        handle_, desc.op, desc.a, desc.b, desc.d, desc.d, pref, 1, &result, &count);
    cublaslt().cublasLtMatmulPreferenceDestroy(pref);
    lt_check(status, "cublasLtMatmulAlgoGetHeuristic");
    MLPO_CHECK(count > 0, "cuBLASLt has no algorithm for a GEMM of m=" + std::to_string(m) +
                              " n=" + std::to_string(n) + " k=" + std::to_string(k));
    found = algos_.emplace(key, result.algo).first;
  }
  const float alpha = 1.0f;
  lt_check(cublaslt().cublasLtMatmul(handle_, desc.op, &alpha, A, desc.a, B, desc.b, &beta, D, desc.d, D,
                                     desc.d, &found->second, workspace_, workspace_bytes_, stream),
           "cublasLtMatmul");
}

void linear_forward(const OpContext& ctx, Gemm& gemm, Tensor out, Tensor x, Tensor w) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_forward(out, x, w);
  const GemmType t = gemm_type(x.dtype, "linear_forward");
  if (I == 0) return fill(ctx, out, 0.0);
  gemm.run(ctx.stream, true, false, O, N, I, t, w.data, I, x.data, I, 0.0f, t, out.data, O);
}

void linear_backward(const OpContext& ctx, Gemm& gemm, Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w,
                     bool accumulate_dx) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  op_contract::linear_backward(dx, dw, dout, x, w);
  const GemmType t = gemm_type(x.dtype, "linear_backward");
  if (O == 0) {
    if (!accumulate_dx) fill(ctx, dx, 0.0);
    return;
  }
  gemm.run(ctx.stream, false, false, I, N, O, t, w.data, I, dout.data, O, accumulate_dx ? 1.0f : 0.0f, t,
           dx.data, I);
  if (N == 0) return;
  gemm.run(ctx.stream, false, true, I, O, N, t, x.data, I, dout.data, O, 1.0f, GemmType::f32, dw.data, I);
}

}  // namespace mlpo::gpu
