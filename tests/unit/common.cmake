# SPDX-License-Identifier: Apache-2.0
smddp_add_test(smddp_unit_common unit 60 LIBS smddp_common SOURCES unit/common_config_test.cc
               unit/common_config_ranges_test.cc unit/common_cpus_test.cc
               unit/common_wait_policy_test.cc)
target_compile_definitions(smddp_unit_common PRIVATE SMDDP_CONFIG_DOC_PATH="${PROJECT_SOURCE_DIR}/docs/CONFIGURATION.md")
