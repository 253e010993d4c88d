# SPDX-License-Identifier: Apache-2.0
# Tests of the CUDA reduction (src/reduce/cuda). The planners are pure and always tested; the
# host API's argument checks run without a GPU whenever the kernels are built (they fail before
# any CUDA call); the kernels themselves are tested in tests/gpu/ and skip without a GPU.
smddp_add_test(reduce_cuda_plan_test unit 60
  LIBS smddp_cuda_plan
  SOURCES unit/reduce_cuda_launch_plan_test.cc unit/reduce_cuda_staging_plan_test.cc)

if(TARGET smddp_reduce_cuda)
  smddp_add_test(reduce_cuda_api_test unit 60
    LIBS smddp_reduce_cuda smddp_reduce
    SOURCES unit/reduce_cuda_api_test.cc)
  smddp_cuda_target(reduce_cuda_api_test)
  # The kernels' element operations, compiled by nvcc but run on the host: no GPU needed.
  smddp_add_test(reduce_cuda_ops_test unit 120
    LIBS smddp_reduce_cuda smddp_reduce
    SOURCES unit/reduce_cuda_ops_test.cu)
  smddp_cuda_target(reduce_cuda_ops_test)
  include(${CMAKE_CURRENT_LIST_DIR}/../gpu/reduce_cuda.cmake)
endif()
