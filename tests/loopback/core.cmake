# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_loopback_core_api loopback 120 LIBS smddp_core SOURCES loopback/core_api_test.cc)
  smddp_add_test(smddp_loopback_core_errors loopback 60 LIBS smddp_core SOURCES loopback/core_errors_test.cc)
  smddp_add_test(smddp_loopback_core_failure_hook loopback 60 LIBS smddp_core
                 SOURCES loopback/core_failure_hook_test.cc)
  smddp_add_test(smddp_loopback_core_p2p loopback 120 LIBS smddp_core SOURCES loopback/core_p2p_test.cc)
  smddp_add_test(smddp_loopback_core_p2p_gone loopback 60 LIBS smddp_core SOURCES loopback/core_p2p_gone_test.cc)
  smddp_add_test(smddp_loopback_core_blocking loopback 120 LIBS smddp_core
                 SOURCES loopback/core_blocking_test.cc)
  smddp_add_test(smddp_loopback_core_estimate loopback 120 LIBS smddp_core
                 SOURCES loopback/core_estimate_test.cc)
  smddp_add_test(smddp_loopback_core_window loopback 180 LIBS smddp_core
                 SOURCES loopback/core_window_test.cc)
  smddp_add_test(smddp_loopback_core_spin loopback 60 LIBS smddp_core SOURCES loopback/core_spin_test.cc)
  smddp_add_test(smddp_loopback_core_dtypes loopback 300 LIBS smddp_core
                 SOURCES loopback/core_dtypes_test.cc)
  # Collectives on (fake) device memory: staging, stream order, errors.
  smddp_add_test(smddp_loopback_core_device loopback 300 LIBS smddp_core
                 SOURCES loopback/core_device_test.cc)
  smddp_add_test(smddp_loopback_core_device_ipc loopback 300 LIBS smddp_core
                 SOURCES loopback/core_device_ipc_test.cc)
  smddp_add_test(smddp_loopback_core_pooled loopback 300 LIBS smddp_core
                 SOURCES loopback/core_pooled_test.cc)
  smddp_add_test(smddp_loopback_core_pooled_hosts loopback 300 LIBS smddp_core
                 SOURCES loopback/core_pooled_hosts_test.cc)
  smddp_add_test(smddp_loopback_core_pooled_hosts_kinds loopback 300 LIBS smddp_core
                 SOURCES loopback/core_pooled_hosts_kinds_test.cc)
  smddp_add_test(smddp_loopback_core_device_ipc_hosts loopback 300 LIBS smddp_core
                 SOURCES loopback/core_device_ipc_hosts_test.cc)
endif()
