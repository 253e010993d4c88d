# SPDX-License-Identifier: Apache-2.0
# The core: Communicator, engine, requests and argument checks.
smddp_layer(smddp_core
  core/communicator.cc
  core/communicator_estimate.cc
  core/communicator_impl.cc
  core/communicator_setup.cc
  core/communicator_nccl.cc
  core/communicator_planes.cc
  core/communicator_staged.cc
  core/device_api.cc
  core/engine.cc
  core/estimator.cc
  core/request.cc
  core/request_state.cc
  core/validate.cc
  core/validate_all_to_all.cc
  core/validate_lists.cc
  core/validate_point_to_point.cc
  core/window.cc
  core/window_impl.cc
  core/point_to_point.cc
  core/point_to_point_mail.cc)
target_link_libraries(smddp_core PUBLIC smddp_watch smddp_model smddp_planes smddp_algorithms smddp_transport smddp_store
  smddp_device smddp_reduce smddp_common)
