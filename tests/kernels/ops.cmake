# Tests of the CPU backend's transformer ops against the double-precision reference.
mlpo_test(kernels_ops_tests
  SOURCES
    ops_cast_test.cpp
    ops_embedding_test.cpp
    ops_rmsnorm_test.cpp
    ops_linear_test.cpp
    ops_rope_test.cpp
    ops_attention_test.cpp
    ops_swiglu_test.cpp
    ops_cross_entropy_test.cpp
  LIBS mlpo_kernels_cpu)
