# SPDX-License-Identifier: Apache-2.0
# The device layer's conformance tests: the fake device always, CUDA when a GPU is visible.
smddp_add_test(smddp_unit_device unit 180 LIBS smddp_device SOURCES unit/device_test.cc)
