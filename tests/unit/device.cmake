# SPDX-License-Identifier: Apache-2.0
# The device layer's conformance tests: the fake device always, CUDA when a GPU is visible.
smddp_add_test(smddp_unit_device unit 180 LIBS smddp_device SOURCES unit/device_test.cc)
# Kernel loading in a process of its own: on CUDA its launches are the process's first.
smddp_add_test(smddp_unit_device_loading unit 120 LIBS smddp_device
               SOURCES unit/device_loading_test.cc)
