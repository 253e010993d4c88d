# SPDX-License-Identifier: Apache-2.0
# Unit tests of the CPU reducer (src/reduce): every (dtype, op) on every ISA this build compiled
# and this CPU runs, rounding edge cases, the portable conversions, and the public API's errors.
foreach(_smddp_reduce_test reduce_kernels_test reduce_rounding_test reduce_convert_test
        reduce_api_test)
  smddp_add_test(${_smddp_reduce_test} unit 60
    LIBS smddp_reduce
    SOURCES unit/${_smddp_reduce_test}.cc)
endforeach()
