#include "kernels/cuda/gemm.hpp"

#include <cublas_api.h>

#include "core/error.hpp"

#include "kernels/cuda/internal/cublaslt_api.hpp"

namespace mlpo::gpu {

namespace {

cudaDataType_t cuda_type(GemmType t) { return t == GemmType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
const char* type_name(GemmType t) { return t == GemmType::bf16 ? "bf16" : "f32"; }
std::size_t type_bytes(GemmType t) { return t == GemmType::bf16 ? 2 : 4; }

// The alignment cuBLASLt may assume for every problem of a batch: that of the first pointer
// and of the stride between problems, in bytes (a power of two, at most 256).
unsigned alignment_of(const void* p, std::int64_t stride_bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uintptr_t>(stride_bytes);
  unsigned align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

template <class T>
void set_layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute, T value,
                const char* what) {
  check_cublaslt(cublaslt().cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof value), what);
}

template <class T>
void set_preference(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attribute, T value,
                    const char* what) {
  check_cublaslt(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof value),
                 what);
}

// A preference object, destroyed on scope exit (also when the heuristic throws).
struct Preference {
  cublasLtMatmulPreference_t get = nullptr;
  Preference() {
    check_cublaslt(cublaslt().cublasLtMatmulPreferenceCreate(&get), "cublasLtMatmulPreferenceCreate");
  }
  ~Preference() { cublaslt().cublasLtMatmulPreferenceDestroy(get); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
};

}  // namespace

GemmType gemm_type(DType t, const char* op) {
  if (t == DType::bf16) return GemmType::bf16;
  if (t == DType::f32) return GemmType::f32;
  MLPO_CHECK(false, std::string(op) + ": the CUDA backend stores bf16 or f32, got " + dtype_name(t));
  return GemmType::f32;
}

void check_cublaslt(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw GpuError("cuBLASLt", static_cast<int>(status), false,
                 "cuBLASLt error in " + what + ": " + cublaslt().cublasLtGetStatusString(status));
}

// The descriptors of one problem shape and the algorithm chosen for it.
struct Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (d) cublaslt().cublasLtMatrixLayoutDestroy(d);
    if (b) cublaslt().cublasLtMatrixLayoutDestroy(b);
    if (a) cublaslt().cublasLtMatrixLayoutDestroy(a);
    if (op) cublaslt().cublasLtMatmulDescDestroy(op);
  }
};

std::string Gemm::Key::describe() const {
  std::string s = "GEMM m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                  (trans_a ? " A^T" : " A") + (trans_b ? " B^T" : " B") + " " + type_name(in) + "->" +
                  type_name(out) + " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
                  " ldd=" + std::to_string(ldd) + " align " + std::to_string(align_a) + "/" +
                  std::to_string(align_b) + "/" + std::to_string(align_d);
  if (batch > 1)
    s += " batch " + std::to_string(batch) + " strides " + std::to_string(stride_a) + "/" +
         std::to_string(stride_b) + "/" + std::to_string(stride_d);
  return s;
}

Gemm::Gemm() {
  check_cublaslt(cublaslt().cublasLtCreate(&handle_), "cublasLtCreate");
  check_allocation(cudaMalloc(&workspace_, kGemmWorkspaceBytes), kGemmWorkspaceBytes,
                   "the cuBLASLt workspace");
  workspace_bytes_ = kGemmWorkspaceBytes;
}

Gemm::~Gemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublaslt().cublasLtDestroy(handle_);
}

const Gemm::Plan& Gemm::plan_for(const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  const std::string what = key.describe();
  auto plan = std::make_unique<Plan>();
  const CublasLtApi& lt = cublaslt();
  check_cublaslt(lt.cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                 "cublasLtMatmulDescCreate for " + what);
  const cublasOperation_t op_a = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          op_b = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublaslt(lt.cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
                 "TRANSA of " + what);
  check_cublaslt(lt.cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
                 "TRANSB of " + what);
  const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
  check_cublaslt(lt.cublasLtMatrixLayoutCreate(&plan->a, cuda_type(key.in), u(key.trans_a ? key.k : key.m),
                                               u(key.trans_a ? key.m : key.k), key.lda),
                 "layout A of " + what);
  check_cublaslt(lt.cublasLtMatrixLayoutCreate(&plan->b, cuda_type(key.in), u(key.trans_b ? key.n : key.k),
                                               u(key.trans_b ? key.k : key.n), key.ldb),
                 "layout B of " + what);
  check_cublaslt(lt.cublasLtMatrixLayoutCreate(&plan->d, cuda_type(key.out), u(key.m), u(key.n), key.ldd),
                 "layout D of " + what);
  if (key.batch > 1) {
    const std::pair<cublasLtMatrixLayout_t, std::int64_t> layouts[] = {
        {plan->a, key.stride_a}, {plan->b, key.stride_b}, {plan->d, key.stride_d}};
    for (const auto& [layout, stride] : layouts) {
      set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<std::int32_t>(key.batch),
                 "batch count");
      set_layout(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride, "batch stride");
    }
  }

  Preference pref;
  set_preference(pref.get, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                 static_cast<std::uint64_t>(workspace_bytes_), "workspace preference");
  set_preference(pref.get, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                 static_cast<std::uint32_t>(key.align_a), "alignment preference A");
  set_preference(pref.get, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                 static_cast<std::uint32_t>(key.align_b), "alignment preference B");
  set_preference(pref.get, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                 static_cast<std::uint32_t>(key.align_d), "alignment preference C");
  set_preference(pref.get, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                 static_cast<std::uint32_t>(key.align_d), "alignment preference D");
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  check_cublaslt(lt.cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->d, plan->d,
                                                   pref.get, 1, &result, &count),
                 "cublasLtMatmulAlgoGetHeuristic for " + what);
  if (count == 0)
    throw GpuError("cuBLASLt", static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED), false,
                   "cuBLASLt has no algorithm for " + what);
  plan->algo = result.algo;
  return *plans_.emplace(key, std::move(plan)).first->second;
}

void Gemm::run(cudaStream_t stream, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, GemmType in, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
               float beta, GemmType out, void* D, std::int64_t ldd, const GemmBatch& batch) {
  if (m == 0 || n == 0 || batch.count == 0) return;
  const bool batched = batch.count > 1;
  const std::int64_t in_bytes = static_cast<std::int64_t>(type_bytes(in)),
                     out_bytes = static_cast<std::int64_t>(type_bytes(out));
  const Key key{trans_a,
                trans_b,
                m,
                n,
                k,
                lda,
                ldb,
                ldd,
                in,
                out,
                beta == 0.0f,
                alignment_of(A, batched ? batch.stride_a * in_bytes : 0),
                alignment_of(B, batched ? batch.stride_b * in_bytes : 0),
                alignment_of(D, batched ? batch.stride_d * out_bytes : 0),
                batch.count,
                batched ? batch.stride_a : 0,
                batched ? batch.stride_b : 0,
                batched ? batch.stride_d : 0};
  const Plan& plan = plan_for(key);
  const float alpha = 1.0f;
  const cublasStatus_t status =
      cublaslt().cublasLtMatmul(handle_, plan.op, &alpha, A, plan.a, B, plan.b, &beta, D, plan.d, D, plan.d,
                                &plan.algo, workspace_, workspace_bytes_, stream);
  if (status != CUBLAS_STATUS_SUCCESS) check_cublaslt(status, "cublasLtMatmul, " + key.describe());
}

}  // namespace mlpo::gpu
