# SPDX-License-Identifier: Apache-2.0
smddp_layer(smddp_common
  common/auth.cc
  common/call.cc
  common/config.cc
  common/cpus.cc
  common/logging.cc
  common/threads.cc
  common/types.cc
  common/wait_policy.cc)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(smddp_common PUBLIC OpenSSL::Crypto)
