# SPDX-License-Identifier: Apache-2.0
# The device layer: memory kinds, streams, events, IPC (device.h). The fake device is always
# built; the CUDA one when nvcc was found (it links the shared cudart and the CUDA kernels of the
# reduce layer; driver functions are resolved at run time, so nothing links libcuda).
smddp_layer(smddp_device
  device/device.cc
  device/fake/device_fake.cc
  device/fake/fake_memory.cc
  device/fake/fake_stream.cc)
target_link_libraries(smddp_device PUBLIC smddp_reduce smddp_common)
if(SMDDP_HAVE_CUDA_COMPILER)
  target_sources(smddp_device PRIVATE device/cuda/device_cuda.cc device/cuda/wait_flag.cu)
  smddp_cuda_target(smddp_device)
  target_compile_definitions(smddp_device PRIVATE SMDDP_DEVICE_HAVE_CUDA)
  target_link_libraries(smddp_device PUBLIC smddp_reduce_cuda CUDA::cudart)
endif()
