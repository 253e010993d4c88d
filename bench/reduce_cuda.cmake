# SPDX-License-Identifier: Apache-2.0
# reduce_cuda_bench: fp16/bf16/fp32 SUM of two device buffers next to the device's measured
# cudaMemcpy bandwidth. Built only with the CUDA kernels (nvcc found); runs only on a GPU.
if(TARGET smddp_reduce_cuda)
  add_executable(reduce_cuda_bench ${CMAKE_CURRENT_LIST_DIR}/reduce_cuda_bench.cu)
  target_link_libraries(reduce_cuda_bench PRIVATE smddp_reduce_cuda smddp_reduce smddp_warnings)
  smddp_cuda_target(reduce_cuda_bench)
endif()
