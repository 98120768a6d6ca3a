# The transformer ops of the CPU backend (included by kernels/cpu/CMakeLists.txt).
# GEMMs go through OpenBLAS from Debian (libopenblas-dev; pkg-config module "openblas",
# cblas.h under /usr/include/x86_64-linux-gnu/openblas-pthread).
if(NOT TARGET PkgConfig::OPENBLAS)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET GLOBAL openblas)
endif()

set(MLPO_KERNELS_CPU_OPS_SOURCES
  cpu_backend.cpp
  ops_cast.cpp
  ops_embedding.cpp
  ops_rmsnorm.cpp
  ops_linear.cpp
  ops_rope.cpp
  ops_attention.cpp
  ops_swiglu.cpp
  ops_cross_entropy.cpp)
set(MLPO_KERNELS_CPU_OPS_DEPS PkgConfig::OPENBLAS)
