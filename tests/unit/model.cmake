# SPDX-License-Identifier: Apache-2.0
smddp_add_test(smddp_unit_model unit 60 LIBS smddp_model SOURCES unit/model_costs_test.cc
               unit/model_params_test.cc unit/model_nccl_test.cc)
