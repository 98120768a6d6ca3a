# Tests of the optimizer-side CPU kernels: fused AdamW and bf16 <-> fp32 conversion.
mlpo_test(kernels_adamw_tests
  SOURCES adamw_test.cpp convert_test.cpp
  LIBS mlpo_kernels_cpu)
