# SPDX-License-Identifier: Apache-2.0
# Multi-process tests of the libfabric transport: forked ranks on 127.0.0.1 over shm and
# tcp;ofi_rxm. One binary; each case is its own ctest (gtest filter) so they run in parallel and a
# failure names the case.
add_executable(transport_mp_test mp/transport_exchange_test.cc mp/transport_errors_test.cc
               mp/transport_bootstrap_test.cc mp/transport_foreign_test.cc
               mp/transport_pid_namespace_test.cc)
target_link_libraries(transport_mp_test PRIVATE smddp_transport smddp_store smddp_warnings
                      Libfabric::headers GTest::gtest GTest::gtest_main)
target_include_directories(transport_mp_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

function(smddp_transport_case name filter)
  add_test(NAME transport_${name} COMMAND transport_mp_test --gtest_filter=${filter})
  set_tests_properties(transport_${name} PROPERTIES LABELS mp TIMEOUT 120)
endfunction()

foreach(provider shm tcp)
  foreach(n 2 3 4)
    smddp_transport_case(ring_${provider}_${n} "Providers/TransportExchange.Ring/${provider}_${n}")
    smddp_transport_case(tags_${provider}_${n}
                         "Providers/TransportExchange.ShuffledTags/${provider}_${n}")
  endforeach()
  smddp_transport_case(cancel_${provider}
                       "Providers/TransportErrors.CancelledRecvLeavesMessageForTheNext/${provider}")
  smddp_transport_case(truncation_${provider}
                       "Providers/TransportErrors.RecvTooSmallIsAnErrorNotACrash/${provider}")
  smddp_transport_case(dead_peer_${provider} "Providers/TransportErrors.DeadPeerIsReported/${provider}")
  smddp_transport_case(foreign_${provider}
                       "Providers/TransportForeign.AnySourceReceiveDeliversOnlyTheGroupsMessages/${provider}")
endforeach()
smddp_transport_case(bootstrap "TransportBootstrap.*")
smddp_transport_case(pid_namespace "TransportPidNamespace.*")
