# Tests of the backends' transformer ops against the double-precision reference: BackendOps
# (backend_fixture.hpp) runs each on the CPU backend and, where it is built and a GPU is usable,
# on the CUDA backend; CPU-only properties (thread counts, GEMM paths, f64) use OpRunner.
mlpo_test(kernels_ops_tests
  SOURCES
    backend_fixture.cpp
    ops_cast_test.cpp
    ops_embedding_test.cpp
    ops_rmsnorm_test.cpp
    ops_linear_test.cpp
    ops_rope_test.cpp
    ops_attention_test.cpp
    ops_swiglu_test.cpp
    ops_cross_entropy_test.cpp
  LIBS mlpo_kernels_cpu $<$<BOOL:${MLPO_HAVE_CUDA}>:mlpo_kernels_cuda>)
target_compile_definitions(kernels_ops_tests PRIVATE MLPO_HAVE_CUDA=$<BOOL:${MLPO_HAVE_CUDA}>)
