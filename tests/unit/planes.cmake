# SPDX-License-Identifier: Apache-2.0
# The device planes' pure parts and smddp's own plane on the fake device.
smddp_add_test(smddp_unit_planes unit 120 LIBS smddp_planes
               SOURCES unit/planes_staged_layout_test.cc unit/planes_path_test.cc
                       unit/planes_ipc_plan_test.cc unit/planes_ipc_hosts_test.cc
                       unit/planes_watchdog_test.cc)
