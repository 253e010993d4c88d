# SPDX-License-Identifier: Apache-2.0
# The core: Communicator, engine, requests and argument checks.
smddp_layer(smddp_core
  core/communicator.cc
  core/communicator_impl.cc
  core/collective_watch.cc
  core/flight_recorder.cc
  core/mismatch.cc
  core/progress_beacon.cc
  core/progress_record.cc
  core/engine.cc
  core/request.cc
  core/validate.cc)
target_link_libraries(smddp_core PUBLIC smddp_algorithms smddp_transport smddp_store smddp_reduce
  smddp_common)
