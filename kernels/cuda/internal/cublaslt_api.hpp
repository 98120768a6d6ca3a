#pragma once
// cuBLASLt, loaded when the first Gemm is made (dlopen of libcublasLt.so.<major>), not when a
// program starts. libcublasLt is ~0.5 GB and costs ~0.7 s to load and relocate; mlpo-run links
// the CUDA backend, and a CPU training run (or a test that starts mlpo-run dozens of times)
// must not pay that for a library it never calls. The functions MLPO uses are resolved by name
// into a table with the header's own signatures, so calls read like the C API:
//   const CublasLtApi& lt = cublaslt();  lt.cublasLtMatmul(...)
// Found through the executable's run path (the CUDA toolkit's lib directory it was linked
// against), LD_LIBRARY_PATH or the loader's cache. If it cannot be loaded, cublaslt() throws
// mlpo::Error naming the library and dlerror()'s reason.

#include <cublasLt.h>

namespace mlpo::gpu {

struct CublasLtApi {
#define MLPO_CUBLASLT_FUNCTION(name) decltype(&::name) name = nullptr;
// One function a line: clang-format does not keep an X-macro list stable.
// clang-format off
#define MLPO_CUBLASLT_FUNCTIONS(X) \
  X(cublasLtCreate) \
  X(cublasLtDestroy) \
  X(cublasLtGetStatusString) \
  X(cublasLtMatmul) \
  X(cublasLtMatmulAlgoGetHeuristic) \
  X(cublasLtMatmulDescCreate) \
  X(cublasLtMatmulDescDestroy) \
  X(cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatmulPreferenceCreate) \
  X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate) \
  X(cublasLtMatrixLayoutDestroy) \
  X(cublasLtMatrixLayoutSetAttribute)
  // clang-format on
  MLPO_CUBLASLT_FUNCTIONS(MLPO_CUBLASLT_FUNCTION)
#undef MLPO_CUBLASLT_FUNCTION
};

// Loads the library on the first call (thread-safe), then returns the same table.
const CublasLtApi& cublaslt();

}  // namespace mlpo::gpu
