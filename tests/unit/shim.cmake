# SPDX-License-Identifier: Apache-2.0
# The torch extension's torch-free parts, built here without torch (with the engine's common layer:
# its messages start with errorHead()).
smddp_add_test(shim_member_handle_test unit 30 LIBS smddp_common SOURCES unit/shim_member_handle_test.cc
               ${PROJECT_SOURCE_DIR}/python/csrc/member_handle.cc)
target_include_directories(shim_member_handle_test PRIVATE ${PROJECT_SOURCE_DIR}/python/csrc)
