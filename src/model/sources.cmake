# SPDX-License-Identifier: Apache-2.0
# The cost model of the collectives (time estimates; bench/model calibrates through it):
# pure costs per algorithm, the selector's choice on a shape, priors and parameter files.
# libsmddp_model.so carries it behind a C ABI (c_api.h) for bench/model.
smddp_layer(smddp_model
  model/costs.cc
  model/forms_all_reduce.cc
  model/forms_all_to_all.cc
  model/forms_collectives.cc
  model/forms_nccl.cc
  model/params.cc
  model/select.cc)
target_link_libraries(smddp_model PUBLIC smddp_algorithms smddp_reduce smddp_common)

add_library(smddp_model_c SHARED model/c_api.cc)
set_target_properties(smddp_model_c PROPERTIES OUTPUT_NAME smddp_model)
target_include_directories(smddp_model_c PRIVATE ${PROJECT_SOURCE_DIR}/include ${SMDDP_SRC_DIR})
target_link_libraries(smddp_model_c PRIVATE smddp_model smddp_warnings)
