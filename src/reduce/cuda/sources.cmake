# SPDX-License-Identifier: Apache-2.0
# CUDA side of the reduce layer, included from src/reduce/sources.cmake.
# - smddp_cuda_plan (always built, no CUDA): pure launch and staging planning, unit-tested on CPU.
# - smddp_reduce_cuda (only when nvcc was found): the kernels and their host API; links cudart
#   (shared, as torch does). Architectures come from SMDDP_CUDA_ARCHS, newest first.
smddp_layer(smddp_cuda_plan
  reduce/cuda/launch_plan.cc
  reduce/cuda/staging_plan.cc)
target_link_libraries(smddp_cuda_plan PUBLIC smddp_common)

if(SMDDP_HAVE_CUDA_COMPILER)
  set(SMDDP_CUDA_ARCHS "90;80;75" CACHE STRING
    "CUDA architectures of the smddp kernels (CUDA_ARCHITECTURES syntax), sm_90 first")
  find_package(CUDAToolkit REQUIRED GLOBAL)  # CUDA::cudart for tests and bench too

  # smddp_cuda_target(TARGET): the CUDA settings every target with .cu sources (or linking
  # smddp_reduce_cuda) uses; tests and bench call it too.
  function(smddp_cuda_target tgt)
    set_target_properties(${tgt} PROPERTIES
      CUDA_ARCHITECTURES "${SMDDP_CUDA_ARCHS}"
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON
      CUDA_RUNTIME_LIBRARY Shared)
    target_compile_options(${tgt} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  endfunction()

  smddp_layer(smddp_reduce_cuda
    reduce/cuda/reducer_cuda.cu
    reduce/cuda/copy_bandwidth_cuda.cc)
  target_link_libraries(smddp_reduce_cuda PUBLIC smddp_cuda_plan smddp_common CUDA::cudart)
  smddp_cuda_target(smddp_reduce_cuda)
endif()
