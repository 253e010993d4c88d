# SPDX-License-Identifier: Apache-2.0
# The device planes: where a collective on CUDA buffers goes (docs/DESIGN.md, "Device planes").
#   planes/smddp/  smddp's own: staged through pinned host memory, CUDA IPC within a host
#   planes/nccl/   NCCL, loaded at run time (built when nccl.h is found; the only place that
#                  includes it)
smddp_layer(smddp_planes
  planes/choice.cc
  planes/smddp/ipc_peers.cc
  planes/smddp/ipc_plan.cc
  planes/smddp/ipc_plan_hosts.cc
  planes/smddp/path.cc
  planes/smddp/staged_layout.cc
  planes/smddp/stager.cc
  planes/smddp/stager_ipc.cc
  planes/smddp/watchdog.cc)
target_link_libraries(smddp_planes PUBLIC smddp_algorithms smddp_store smddp_device smddp_common)

# nccl.h: the CUDA toolkit's, NCCL_HOME's, or SMDDP_NCCL_INCLUDE_DIR (the nvidia-nccl package's
# include directory, say). It includes the CUDA runtime's headers, so the toolkit is needed too.
if(SMDDP_WITH_NCCL AND SMDDP_HAVE_CUDA_COMPILER)
  find_path(SMDDP_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
endif()
if(SMDDP_NCCL_INCLUDE_DIR)
  target_sources(smddp_planes PRIVATE
    planes/nccl/nccl_api.cc
    planes/nccl/nccl_calls.cc
    planes/nccl/nccl_comm.cc
    planes/nccl/nccl_pairs.cc
    planes/nccl/nccl_plane.cc
    planes/nccl/nccl_plane_form.cc
    planes/nccl/nccl_types.cc
    planes/nccl/nccl_work.cc)
  target_include_directories(smddp_planes SYSTEM PRIVATE ${SMDDP_NCCL_INCLUDE_DIR}
                             ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(smddp_planes PUBLIC ${CMAKE_DL_LIBS})
  target_compile_definitions(smddp_planes PUBLIC SMDDP_HAVE_NCCL_PLANE)
  set(SMDDP_HAVE_NCCL_PLANE ON CACHE INTERNAL "")
  message(STATUS "smddp: NCCL plane built against ${SMDDP_NCCL_INCLUDE_DIR}/nccl.h (NCCL is loaded at run time)")
else()
  set(SMDDP_HAVE_NCCL_PLANE OFF CACHE INTERNAL "")
  message(STATUS "smddp: no nccl.h: CUDA tensors use smddp's own plane only")
endif()
