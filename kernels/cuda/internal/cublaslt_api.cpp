#include "kernels/cuda/internal/cublaslt_api.hpp"

#include <cublas_api.h>
#include <dlfcn.h>

#include <string>

#include "core/error.hpp"

namespace mlpo::gpu {

namespace {

CublasLtApi load() {
  const std::string library = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  // Never closed: the table lives as long as the process.
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw Error("cannot load " + library + " (cuBLASLt, for the CUDA backend's GEMMs): " + ::dlerror() +
                "; put the CUDA toolkit's lib directory on LD_LIBRARY_PATH");
  CublasLtApi api;
#define MLPO_CUBLASLT_RESOLVE(name)                                        \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name)); \
  if (api.name == nullptr)                                                 \
    throw Error(library + " has no symbol " #name " (a cuBLASLt older than the headers?)");
  MLPO_CUBLASLT_FUNCTIONS(MLPO_CUBLASLT_RESOLVE)
#undef MLPO_CUBLASLT_RESOLVE
  return api;
}

}  // namespace

const CublasLtApi& cublaslt() {
  static const CublasLtApi api = load();
  return api;
}

}  // namespace mlpo::gpu
