# SPDX-License-Identifier: Apache-2.0
# The never-hang watch: flight recorder, progress beacons, collective signatures (the mismatch
# check), the straggler detector, and the collective watch that turns a stuck wait into an error
# naming the ranks.
smddp_layer(smddp_watch
  watch/collective_watch.cc
  watch/flight_recorder.cc
  watch/liveness_probe.cc
  watch/peer_progress.cc
  watch/progress_beacon.cc
  watch/signature.cc
  watch/straggler_analysis.cc
  watch/straggler_exchange.cc
  watch/straggler_samples.cc
  watch/trace_recorder.cc)
target_link_libraries(smddp_watch PUBLIC smddp_algorithms smddp_transport smddp_store
  smddp_common)
