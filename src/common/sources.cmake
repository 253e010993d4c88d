# SPDX-License-Identifier: Apache-2.0
smddp_layer(smddp_common
  common/call.cc
  common/config.cc
  common/cpus.cc
  common/logging.cc
  common/types.cc)
