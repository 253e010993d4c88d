# SPDX-License-Identifier: Apache-2.0
target_sources(smddp_transport PRIVATE transport/loopback/loopback_transport.cc)
