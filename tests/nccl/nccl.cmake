# SPDX-License-Identifier: Apache-2.0
# smddp's test NCCL (test_nccl.h): the NCCL calls the NCCL plane makes, on the fake device, loaded
# through SMDDP_NCCL_LIBRARY by the NCCL-plane tests (C++ and Python). Built where the plane is:
# it includes the same nccl.h. Three builds: the full one (2.30.7), the oldest NCCL the plane takes
# (2.18.0: no ncclCommShrink, ncclMemAlloc or windows) and one too old (2.16.5, refused at load).
if(SMDDP_HAVE_NCCL_PLANE)
  foreach(variant smddp_test_nccl:23007 smddp_test_nccl_minimal:21800 smddp_test_nccl_old:21605)
    string(REPLACE ":" ";" parts ${variant})
    list(GET parts 0 name)
    list(GET parts 1 code)
    add_library(${name} SHARED nccl/mesh.cc nccl/test_nccl.cc nccl/test_nccl_ops.cc)
    target_include_directories(${name} SYSTEM PRIVATE ${SMDDP_NCCL_INCLUDE_DIR}
                               ${CUDAToolkit_INCLUDE_DIRS})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src
                               ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${name} PRIVATE smddp_reduce smddp_warnings Threads::Threads)
    target_compile_definitions(${name} PRIVATE SMDDP_TEST_NCCL_VERSION_CODE=${code})
    if(code LESS 23000)
      target_compile_definitions(${name} PRIVATE SMDDP_TEST_NCCL_MINIMAL)
    endif()
  endforeach()
endif()
