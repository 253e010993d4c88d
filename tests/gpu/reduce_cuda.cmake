# SPDX-License-Identifier: Apache-2.0
# GPU tier (ctest label "gpu"): the CUDA kernels against a float64 reference and the CPU reducer.
# Each test skips itself (GTEST_SKIP, reported by ctest as "Skipped") when no CUDA device is
# usable. Included from tests/unit/reduce_cuda.cmake when smddp_reduce_cuda is built.
smddp_add_test(reduce_cuda_kernels_test gpu 900
  LIBS smddp_reduce_cuda smddp_reduce CUDA::cudart
  SOURCES gpu/reduce_cuda_kernels_test.cc gpu/reduce_cuda_misc_test.cc)
smddp_cuda_target(reduce_cuda_kernels_test)
set_tests_properties(reduce_cuda_kernels_test PROPERTIES SKIP_REGULAR_EXPRESSION "no CUDA device is usable")
