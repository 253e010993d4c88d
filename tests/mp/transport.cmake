# SPDX-License-Identifier: Apache-2.0
# The transport contract suite (transport/transport.h's rules) over every transport: the loopback
# fabric (threads of one process) and libfabric's shm, tcp;ofi_rxm and net (forked ranks on
# 127.0.0.1); and the libfabric bootstrap's own tests. One binary; each case is its own ctest
# (gtest filter) so they run in parallel and a failure names the case and the transport.
add_executable(transport_mp_test mp/transport_contract.cc mp/transport_contract_posting_test.cc
               mp/transport_contract_errors_test.cc mp/transport_contract_foreign_test.cc
               mp/transport_bootstrap_test.cc mp/transport_pid_namespace_test.cc)
target_link_libraries(transport_mp_test PRIVATE smddp_transport smddp_store smddp_warnings
                      Libfabric::headers GTest::gtest GTest::gtest_main)
target_include_directories(transport_mp_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

function(smddp_transport_case name filter label)
  add_test(NAME transport_${name} COMMAND transport_mp_test --gtest_filter=${filter})
  set_tests_properties(transport_${name} PROPERTIES LABELS ${label} TIMEOUT 120)
endfunction()

# The loopback cases run in one process (the loopback tier); the libfabric ones fork (mp).
foreach(kind loopback shm tcp net)
  set(label mp)
  if(kind STREQUAL "loopback")
    set(label loopback)
  endif()
  foreach(n 2 3 4)
    smddp_transport_case(ring_${kind}_${n} "Transports/TransportContractRanks.Ring/${kind}_${n}"
                         ${label})
    smddp_transport_case(tags_${kind}_${n}
                         "Transports/TransportContractRanks.ShuffledTags/${kind}_${n}" ${label})
  endforeach()
  foreach(case progress:ProgressCountsEachFinishedOpOnce any_peer:AnyPeerReceiveNamesTheSource
               cancel:CancelledRecvLeavesMessageForTheNext
               truncation:RecvTooSmallIsAnErrorNotACrash dead_peer:DeadPeerIsReported
               foreign:AnySourceReceiveDeliversOnlyTheGroupsMessages)
    string(REPLACE ":" ";" parts "${case}")
    list(GET parts 0 short)
    list(GET parts 1 test)
    smddp_transport_case(${short}_${kind} "Transports/TransportContract.${test}/${kind}" ${label})
  endforeach()
endforeach()
# The loopback fabric has no outside: its foreign case asks its capabilities, then skips.
set_tests_properties(transport_foreign_loopback
                     PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
smddp_transport_case(bootstrap "TransportBootstrap.*" mp)
smddp_transport_case(pid_namespace "TransportPidNamespace.*" mp)
